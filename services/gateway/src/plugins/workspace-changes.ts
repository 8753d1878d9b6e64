import fp from 'fastify-plugin';
import { openFullPatches, openWorkspaceChanges, type FullPatches, type WorkspaceChangesStore } from '@svc/bus';
import type { Logger } from '@svc/service-kit';

declare module 'fastify' {
  interface FastifyInstance {
    /** The workspaces' changes as their sidecars reported them, kept for after the sandbox (docs/workspace.md, "Changes"). */
    workspaceChanges: WorkspaceChangesStore;
    /** Whole diffs read in sandboxes by the session service (`?full=true`), streamed from the object store. */
    fullPatches: FullPatches;
  }
}

/** `app.workspaceChanges`: sidecars report there, people read from there. Waits for its bucket and object store. */
export const workspaceChangesPlugin = fp<{ logger: Logger }>(
  async (app, { logger }) => {
    app.decorate('workspaceChanges', await openWorkspaceChanges(app.bus, logger));
    app.decorate('fullPatches', await openFullPatches(app.bus, logger));
  },
  { name: 'svc-workspace-changes', fastify: '5.x', dependencies: ['svc-bus'] },
);
