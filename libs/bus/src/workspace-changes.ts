import { createHash } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { kvBuckets, objectBuckets, WORKSPACE_PATCHES_KEPT_MS, type PullRequestRecord, type PushRecord, type WorkspaceChanges } from '@svc/protocol';
import { retryWithBackoff, type Logger } from '@svc/service-kit';
import { isBusUnavailable } from './connection.js';
import { openBucketWhenReachable } from './kv-buckets.js';
import { openObjectStore } from './object-stores.js';

/** A report as kept: its summary, and the name of its patch in the object store. */
type KeptReport = Omit<WorkspaceChanges, 'pushed' | 'pull_request'> & { patch_object: string };

/**
 * The workspaces' changes as their sidecars reported them (docs/workspace.md, "Changes"), kept
 * apart from the sandboxes so they outlive them: each worker's last report in the
 * `svc_workspace_changes` KV bucket, its patch in the `svc_workspace_patches` object store under
 * its SHA-256 (a name written once: the same patch reported again is not written again), and
 * beside them what people did with the changes (a push, a pull request).
 */
export interface WorkspaceChangesStore {
  /** Keeps a report and its patch. */
  put(changes: Omit<WorkspaceChanges, 'pushed' | 'pull_request'>, patch: string): Promise<void>;
  /** The worker's last report with what people did with it, or undefined when none was made. */
  get(workerId: string): Promise<WorkspaceChanges | undefined>;
  /** The patch of the worker's last report; undefined when there is none (or it is older than kept). */
  patch(workerId: string): Promise<string | undefined>;
  recordPush(workerId: string, record: PushRecord): Promise<void>;
  recordPullRequest(workerId: string, record: PullRequestRecord): Promise<void>;
}

/** The object store of patches, made if missing (with `replicas`), else taken as it is. */
export async function openWorkspacePatchStore(nc: NatsConnection, replicas = 1): Promise<ObjectStore> {
  return openObjectStore(nc, objectBuckets.workspacePatches, { keptMs: WORKSPACE_PATCHES_KEPT_MS, replicas });
}

export async function openWorkspaceChanges(nc: NatsConnection, logger: Logger): Promise<WorkspaceChangesStore> {
  const patches = await retryWithBackoff('opening the workspace patches store', () => openWorkspacePatchStore(nc), { logger, retryable: isBusUnavailable });
  const kv: KV = await openBucketWhenReachable(nc, kvBuckets.workspaceChanges, logger);
  const read = async <T>(key: string): Promise<T | undefined> => {
    const entry = await kv.get(key);
    return entry && entry.operation === 'PUT' ? entry.json<T>() : undefined;
  };
  return {
    async put(changes, patch) {
      const name = `${changes.worker_id}/${createHash('sha256').update(patch).digest('hex')}`;
      // Written only when missing: writing a name again would purge its first chunks, which no service may.
      if ((await patches.info(name)) === null) await patches.putBlob({ name }, Buffer.from(patch, 'utf8'));
      const kept: KeptReport = { ...changes, patch_object: name };
      await kv.put(`${changes.worker_id}.report`, JSON.stringify(kept));
    },
    async get(workerId) {
      const [report, pushed, pullRequest] = await Promise.all([
        read<KeptReport>(`${workerId}.report`),
        read<PushRecord>(`${workerId}.pushed`),
        read<PullRequestRecord>(`${workerId}.pull_request`),
      ]);
      if (!report) return undefined;
      const { patch_object: _name, ...changes } = report;
      return { ...changes, ...(pushed ? { pushed } : {}), ...(pullRequest ? { pull_request: pullRequest } : {}) };
    },
    async patch(workerId) {
      const report = await read<KeptReport>(`${workerId}.report`);
      if (!report) return undefined;
      const bytes = await patches.getBlob(report.patch_object);
      return bytes === null ? undefined : Buffer.from(bytes).toString('utf8');
    },
    async recordPush(workerId, record) {
      await kv.put(`${workerId}.pushed`, JSON.stringify(record));
    },
    async recordPullRequest(workerId, record) {
      await kv.put(`${workerId}.pull_request`, JSON.stringify(record));
    },
  };
}

/** A whole patch kept in the object store: its name there and its size. */
export interface KeptPatch {
  object: string;
  bytes: number;
}

/**
 * Whole patches of workspaces, read in their sandboxes (`GET …/changes/diff?full=true`): kept under
 * `<worker id>/full/<sha256>` (a name written once), streamed in and out, never held whole.
 */
export async function openFullPatches(nc: NatsConnection, logger: Logger) {
  const store = await retryWithBackoff('opening the workspace patches store', () => openWorkspacePatchStore(nc), { logger, retryable: isBusUnavailable });
  return {
    async keep(workerId: string, sha256: string, bytes: number, content: () => ReadableStream<Uint8Array>): Promise<KeptPatch> {
      const object = `${workerId}/full/${sha256}`;
      if ((await store.info(object)) === null) await store.put({ name: object }, content());
      return { object, bytes };
    },
    /** The patch's bytes as they are read; undefined when it is not kept (older than kept). */
    async read(object: string): Promise<ReadableStream<Uint8Array> | undefined> {
      const found = await store.get(object);
      return found === null ? undefined : found.data;
    },
  };
}

export type FullPatches = Awaited<ReturnType<typeof openFullPatches>>;
