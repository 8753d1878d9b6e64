// Lint for the whole workspace. The module-boundary rules are the architecture in code:
// tags on two axes (type:* and scope:*) live in each package.json under "nx".
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

/**
 * Who may import whom, by scope. `sidecar` and `cli` never reach store or bus. The gateway
 * (scope:edge) reaches the services over the bus, never the database: the store (scope:store)
 * belongs to the services behind it. Test code may also use the test harness (scope:test),
 * which itself may use anything, and a gateway test may seed the store.
 */
const scopeConstraints = (testCode) => {
  const harness = testCode ? ['scope:test'] : [];
  return [
    { sourceTag: 'scope:contract', onlyDependOnLibsWithTags: [...harness] },
    { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:contract', 'scope:shared', ...harness] },
    { sourceTag: 'scope:store', onlyDependOnLibsWithTags: ['scope:contract', 'scope:shared', ...harness] },
    { sourceTag: 'scope:server', onlyDependOnLibsWithTags: ['scope:contract', 'scope:shared', 'scope:server', 'scope:store', 'scope:edge', ...harness] },
    { sourceTag: 'scope:edge', onlyDependOnLibsWithTags: ['scope:contract', 'scope:shared', 'scope:server', ...harness, ...(testCode ? ['scope:store'] : [])] },
    { sourceTag: 'scope:sandbox', onlyDependOnLibsWithTags: ['scope:contract', 'scope:shared', ...harness] },
    { sourceTag: 'scope:client', onlyDependOnLibsWithTags: ['scope:contract', 'scope:shared', ...harness] },
    { sourceTag: 'scope:test', onlyDependOnLibsWithTags: ['scope:contract', 'scope:shared', 'scope:server', 'scope:store', 'scope:edge', 'scope:test'] },
    {
      sourceTag: 'scope:bench',
      onlyDependOnLibsWithTags: ['scope:contract', 'scope:shared', 'scope:server', 'scope:store', 'scope:edge', 'scope:sandbox', 'scope:test'],
    },
  ];
};

/** Who may import whom, by kind: libs never import services, services never import each other. */
const typeConstraints = (testCode) => [
  { sourceTag: 'type:lib', onlyDependOnLibsWithTags: testCode ? ['type:lib', 'type:test'] : ['type:lib'] },
  { sourceTag: 'type:test', onlyDependOnLibsWithTags: ['type:lib', 'type:test'] },
  // A service's integration tests may start the real services it talks to.
  { sourceTag: 'type:service', onlyDependOnLibsWithTags: testCode ? ['type:lib', 'type:test', 'type:service'] : ['type:lib'] },
  { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib', 'type:service', ...(testCode ? ['type:test'] : [])] },
  // End-to-end tests start the services as processes; they import only libraries.
  { sourceTag: 'type:e2e', onlyDependOnLibsWithTags: ['type:lib', 'type:test'] },
  { sourceTag: 'type:bench', onlyDependOnLibsWithTags: ['type:lib', 'type:service', 'type:app', 'type:test'] },
];

const boundaries = (testCode) => ({
  '@nx/enforce-module-boundaries': [
    'error',
    {
      enforceBuildableLibDependency: false,
      allow: [],
      depConstraints: [...scopeConstraints(testCode), ...typeConstraints(testCode)],
    },
  ],
});

const testFiles = ['**/*.test.ts', '**/*.test.tsx', '**/test/**/*.ts', '**/e2e/**/*.ts', '**/vitest.config.ts', '**/vitest.*.config.ts'];

/** Every line counts, blank lines and comments included: the limit is on what a reader scrolls through. */
const maxLinesPerFunction = (max) => ({ 'max-lines-per-function': ['error', { max, skipBlankLines: false, skipComments: false, IIFEs: true }] });

/** The code of the services, the sidecar and the libraries; tests are exempt. */
const sourceFiles = ['services/**/*.{ts,tsx,mjs}', 'sidecar/**/*.{ts,tsx,mjs}', 'libs/**/*.{ts,tsx,mjs}'];

/**
 * The files whose long functions are allowed, each with why: a route table or a script reads top to
 * bottom, and splitting it would only scatter it. Write each as { file: '<glob>', why: '<one line>' }.
 */
const longFunctionExceptions = [];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/executable/**', '**/node_modules/**', '**/.nx/**', '**/coverage/**', '**/.svc/**', '.cache/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    plugins: { '@nx': nx },
    rules: {
      ...boundaries(false),
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  {
    files: testFiles,
    rules: { ...boundaries(true), 'no-console': 'off' },
  },
  {
    // A function longer than a screen or two is several steps that want names (docs/testing.md).
    files: sourceFiles,
    ignores: [...testFiles, ...longFunctionExceptions.map(({ file }) => file)],
    rules: maxLinesPerFunction(100),
  },
  {
    // A service's `start` only builds its parts and connects them; the work lives in named modules.
    // ESLint cannot single out one function by name, so the limit holds for every function here.
    files: ['services/*/src/index.ts'],
    rules: maxLinesPerFunction(60),
  },
  {
    // Benchmarks print their figures.
    files: ['bench/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // Each project's Vitest config extends the one shared file at the workspace root.
    files: ['**/vitest.config.ts', '**/vitest.*.config.ts'],
    rules: { '@nx/enforce-module-boundaries': 'off' },
  },
);
