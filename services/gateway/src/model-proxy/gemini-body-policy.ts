import { arrayAt, isObject, objectAt, quote, refuse, WHY_REMOTE, WHY_SERVER_TOOL, WHY_STORED, type BodyPolicy, type Json } from './body-checks.js';

/**
 * The Gemini API's `generateContent` / `streamGenerateContent` / `countTokens` bodies
 * (docs/model-proxy.md, "What passes"): contents the request carries (text, inline data, the
 * agent's own function calls and their results, thoughts), the agent's own function
 * declarations, and settings. Refused: a `fileData` part (a URL the provider fetches, or a file
 * the key's Files API holds), `cachedContent` (a cache any holder of the key made), and every
 * tool Google runs itself (Search, URL context, code execution, Maps, file search, MCP servers).
 */

const GENERATE_FIELDS: ReadonlySet<string> = new Set(['contents', 'tools', 'toolConfig', 'safetySettings', 'systemInstruction', 'generationConfig']);
const GENERATE_REFUSED_FIELDS: Readonly<Record<string, string>> = { cachedContent: WHY_STORED };
/** `countTokens` takes `contents`, or a whole `generateContentRequest` (with its `model`). */
const COUNT_FIELDS: ReadonlySet<string> = new Set(['contents', 'generateContentRequest']);

/** The keys a part may hold: its data (one of them) and its metadata. */
const PART_KEYS: ReadonlySet<string> = new Set([
  'text',
  'inlineData',
  'functionCall',
  'functionResponse',
  'thought',
  'thoughtSignature',
  'videoMetadata',
  'partMetadata',
  'mediaResolution',
]);
const PART_REFUSED: Readonly<Record<string, string>> = {
  fileData: `${WHY_REMOTE}, or read it from what the key stored`,
  executableCode: WHY_SERVER_TOOL,
  codeExecutionResult: WHY_SERVER_TOOL,
};

function checkParts(parts: unknown, field: string): void {
  arrayAt(parts, field).forEach((item, index) => {
    const at = `${field}[${index}]`;
    const part = objectAt(item, at);
    for (const key of Object.keys(part)) {
      const why = PART_REFUSED[key];
      if (why !== undefined) refuse(`${at}.${key}`, `is not passed: ${why}`);
      if (!PART_KEYS.has(key)) refuse(`${at}.${key}`, `is not a part the proxy passes (passed: ${[...PART_KEYS].join(', ')})`);
    }
    // A function's result may carry parts of its own (images a tool read).
    const response = part['functionResponse'];
    if (isObject(response) && response['parts'] !== undefined) checkParts(response['parts'], `${at}.functionResponse.parts`);
  });
}

/** A `Content`: `{role, parts}`. */
function checkContent(item: unknown, field: string): void {
  const content = objectAt(item, field);
  checkParts(content['parts'] ?? [], `${field}.parts`);
}

/** Only the agent's own functions: every other tool is run by Google. */
function checkTools(tools: unknown): void {
  arrayAt(tools, 'tools').forEach((item, index) => {
    const tool = objectAt(item, `tools[${index}]`);
    for (const key of Object.keys(tool)) if (key !== 'functionDeclarations') refuse(`tools[${index}].${key}`, `is not passed: ${WHY_SERVER_TOOL}`);
  });
}

function checkGenerate(body: Json): Json {
  arrayAt(body['contents'] ?? [], 'contents').forEach((item, index) => checkContent(item, `contents[${index}]`));
  if (body['systemInstruction'] !== undefined) checkContent(body['systemInstruction'], 'systemInstruction');
  if (body['tools'] !== undefined) checkTools(body['tools']);
  for (const field of ['generationConfig', 'toolConfig'] as const) if (body[field] !== undefined) objectAt(body[field], field);
  // Several candidates multiply the output a request holds against the budget: one at a time.
  const candidates = isObject(body['generationConfig']) ? body['generationConfig']['candidateCount'] : undefined;
  if (candidates !== undefined && candidates !== 1) refuse('generationConfig.candidateCount', `${quote(candidates)} is not passed: one candidate a request`);
  return body;
}

function checkCount(body: Json): Json {
  arrayAt(body['contents'] ?? [], 'contents').forEach((item, index) => checkContent(item, `contents[${index}]`));
  const whole = body['generateContentRequest'];
  if (whole === undefined) return body;
  const request = objectAt(whole, 'generateContentRequest');
  for (const field of Object.keys(request)) {
    if (field === 'model') continue;
    if (field in GENERATE_REFUSED_FIELDS) refuse(`generateContentRequest.${field}`, `is not passed: ${GENERATE_REFUSED_FIELDS[field]}`);
    if (!GENERATE_FIELDS.has(field)) refuse(`generateContentRequest.${field}`, `is not a field the proxy passes (${quote(field)})`);
  }
  checkGenerate(request);
  return body;
}

export const GEMINI_POLICY: Readonly<Record<'generate' | 'count', BodyPolicy>> = {
  generate: { fields: GENERATE_FIELDS, refused: GENERATE_REFUSED_FIELDS, check: checkGenerate },
  count: { fields: COUNT_FIELDS, refused: GENERATE_REFUSED_FIELDS, check: checkCount },
};
