import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

const run = promisify(execFile);

/** The chart, from this package's place in the workspace. */
export const CHART_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../helm/svc');

const HELM_INSTALL_HINT =
  'install it with: bash deploy/dev-setup.sh (go install helm.sh/helm/v3/cmd/helm@<HELM_VERSION in .ci/versions.env>), or set SVC_HELM to its path';

/** The helm binary: `SVC_HELM`, then PATH, then Go's bin directory. */
function findHelmBinary(env: Record<string, string | undefined> = process.env): string {
  if (env['SVC_HELM']) return env['SVC_HELM'];
  const goBin = env['GOBIN'] ?? path.join(env['GOPATH'] ?? path.join(homedir(), 'go'), 'bin');
  const found = [...(env['PATH'] ?? '').split(path.delimiter).filter(Boolean), goBin]
    .map((dir) => path.join(dir, 'helm'))
    .find((candidate) => existsSync(candidate));
  if (!found) throw new Error(`helm was not found on PATH or in ${goBin}; ${HELM_INSTALL_HINT}`);
  return found;
}

/** The Kubernetes version the chart is rendered and linted for (it needs >= 1.28). */
const KUBE_VERSION = '1.31.0';

/** A rendered Kubernetes object, as YAML gives it. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export interface RenderOptions {
  /** Files under helm/svc/ci/ (e.g. "single.yaml") or absolute paths. */
  valuesFiles?: string[];
  set?: Record<string, string>;
  namespace?: string;
  release?: string;
  /** Only these templates (e.g. "templates/session-rbac.yaml"). */
  showOnly?: string[];
  /** APIs the cluster has beside the built-in ones (`--api-versions`, e.g. "monitoring.coreos.com/v1"). */
  apiVersions?: string[];
}

function helmArgs(options: RenderOptions): string[] {
  return [
    ...(options.valuesFiles ?? []).flatMap((file) => ['-f', path.isAbsolute(file) ? file : path.join(CHART_DIR, 'ci', file)]),
    ...Object.entries(options.set ?? {}).flatMap(([key, value]) => ['--set', `${key}=${value}`]),
  ];
}

/** `helm template`: every object the chart renders, in order. Throws with helm's message when it refuses. */
export async function renderChart(options: RenderOptions = {}): Promise<Manifest[]> {
  const args = [
    'template',
    options.release ?? 'svc',
    CHART_DIR,
    '--namespace',
    options.namespace ?? 'svc',
    '--kube-version',
    KUBE_VERSION,
    ...helmArgs(options),
    ...(options.apiVersions ?? []).flatMap((api) => ['--api-versions', api]),
    ...(options.showOnly ?? []).flatMap((t) => ['--show-only', t]),
  ];
  try {
    const { stdout } = await run(findHelmBinary(), args, { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
    return parseAllDocuments(stdout)
      .map((document) => document.toJS() as Manifest | null)
      .filter((manifest): manifest is Manifest => manifest !== null);
  } catch (err) {
    const failed = err as { stderr?: string; message: string };
    throw new Error(`helm template failed: ${failed.stderr?.trim() || failed.message}`, { cause: err });
  }
}

/** `helm lint` with these values; resolves with its output, rejects with it on failure. */
export async function lintChart(options: RenderOptions = {}): Promise<string> {
  try {
    const { stdout } = await run(findHelmBinary(), ['lint', CHART_DIR, '--strict', '--kube-version', KUBE_VERSION, ...helmArgs(options)], { encoding: 'utf8' });
    return stdout;
  } catch (err) {
    const failed = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`helm lint failed: ${failed.stdout ?? ''}${failed.stderr ?? failed.message}`, { cause: err });
  }
}
