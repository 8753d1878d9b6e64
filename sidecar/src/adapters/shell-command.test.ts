import { describe, expect, it } from 'vitest';
import { modelCommandOf } from './shell-command.js';

describe('the command line inside a shell wrapper', () => {
  it("a command is matched as the model wrote it: Codex's shell wrapper is taken off, anything else is kept whole", () => {
    expect(modelCommandOf("/bin/bash -c 'rm -rf data'")).toBe('rm -rf data');
    expect(modelCommandOf("bash -lc 'echo '\\''quoted'\\'' > out.txt'")).toBe("echo 'quoted' > out.txt");
    expect(modelCommandOf('/bin/sh -c "echo \\"hi\\" \\$HOME"')).toBe('echo "hi" $HOME');
    expect(modelCommandOf('rm -rf data')).toBe('rm -rf data');
    expect(modelCommandOf("/bin/bash -c 'a' extra")).toBe("/bin/bash -c 'a' extra");
    expect(modelCommandOf("/bin/bash -c 'unterminated")).toBe("/bin/bash -c 'unterminated");
  });
});
