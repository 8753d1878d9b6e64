import { readFile } from 'node:fs/promises';
import path from 'node:path';

/** A process on the host: its pid and its argv. */
interface HostProcess {
  pid: number;
  argv: string[];
}

async function childrenOf(pid: number): Promise<number[]> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return text.trim().split(/\s+/).filter(Boolean).map(Number);
}

async function argvOf(pid: number): Promise<string[]> {
  const text = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return text.split('\0').filter(Boolean);
}

/** Every process under the local sandbox of `workerId` (its launcher's descendants), as the host sees them. */
async function sandboxProcesses(sandboxesDir: string, workerId: string): Promise<HostProcess[]> {
  const pids = JSON.parse(await readFile(path.join(sandboxesDir, workerId, 'pids.json'), 'utf8')) as { launcher: number };
  const found: HostProcess[] = [];
  const queue = [pids.launcher];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    found.push({ pid, argv: await argvOf(pid) });
    queue.push(...(await childrenOf(pid)));
  }
  return found;
}

/** The pid of the sidecar in a local sandbox (not its supervisor, not a demo agent run by the same executable), if it runs. */
export async function sidecarPidOf(sandboxesDir: string, workerId: string): Promise<number | undefined> {
  const processes = await sandboxProcesses(sandboxesDir, workerId);
  return processes.find(({ argv }) => argv[0]?.endsWith('svc-sidecar') && !argv.includes('demo-agent'))?.pid;
}

/** The environments of every process in the local sandbox of `workerId`, as the host reads them (`/proc/<pid>/environ`). */
export async function sandboxEnvironments(sandboxesDir: string, workerId: string): Promise<string[]> {
  const processes = await sandboxProcesses(sandboxesDir, workerId);
  return Promise.all(processes.map(({ pid }) => readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '')));
}
