// Names a doc writes as code that are not ours: another program's protocol, a browser's or a
// platform's API, a key on the keyboard. The doc-reference test takes them as they are; add one
// here only with what it belongs to. A name of ours that is missing is fixed in the doc, never here.

const groups: Record<string, string[]> = {
  'Codex app-server: item types, approval decisions and input items': [
    'agentMessage',
    'commandExecution',
    'fileChange',
    'mcpToolCall',
    'acceptForSession',
    'ImageUserInput',
  ],
  "Claude Code's tool names": ['ToolSearch', 'WebSearch', 'WebFetch'],
  "the Agent Client Protocol's capabilities and tool call fields": [
    'readTextFile',
    'writeTextFile',
    'loadSession',
    'rawInput',
    'rawOutput',
    'claudeCode',
    'outputByteLimit',
  ],
  "Claude Code's permission modes": ['acceptEdits'],
  "the Gemini API's methods, request fields, parts, tools and usage counts": [
    'countTokens',
    'generateContentRequest',
    'cachedContent',
    'toolConfig',
    'safetySettings',
    'systemInstruction',
    'generationConfig',
    'functionDeclarations',
    'inlineData',
    'functionCall',
    'functionResponse',
    'thoughtSignature',
    'videoMetadata',
    'partMetadata',
    'mediaResolution',
    'googleSearch',
    'googleSearchRetrieval',
    'urlContext',
    'codeExecution',
    'googleMaps',
    'fileSearch',
    'computerUse',
    'finishReason',
    'toolUsePromptTokenCount',
    'candidateCount',
  ],
  'JSON Schema keywords': ['additionalProperties'],
  'the browser: Web Storage': ['localStorage', 'sessionStorage'],
  'the browser: the Encoding API and constructed stylesheets': ['TextEncoder', 'adoptedStyleSheets'],
  "xterm.js's terminal options": ['windowOptions'],
  'Kubernetes: the seccomp profile type': ['RuntimeDefault'],
  'keys of the keyboard': ['PgUp', 'PgDn'],
  "Node's convention, which svc never reads": ['NODE_ENV'],
};

/** Each name that is not ours, with what it belongs to. */
export const FOREIGN_NAMES: ReadonlyMap<string, string> = new Map(
  Object.entries(groups).flatMap(([owner, names]) => names.map((name) => [name, owner] as const)),
);
