import { isPersonInterrupt, isPersonMessage, parseSource, personMessageImages, type StoredEvent } from '@svc/protocol';
import { deciderOf, firstLines, formatCost, formatCount, summarizeInput } from '@svc/viewer';
import { memo, useState } from 'react';
import Markdown, { type Components } from 'react-markdown';
import { MessageImages } from './MessageImages.js';

/**
 * One event of the history, as `svc attach` shows it (the same summaries, from `@svc/viewer`).
 * `you`: the signed-in person's `sub`, whose own messages read "You".
 */
export function EventRow({ event, you }: { event: StoredEvent; you?: string | undefined }) {
  switch (event.type) {
    case 'assistant': {
      const data = (event as StoredEvent<'assistant'>).data;
      return (
        <div className={`row assistant${data.kind === 'thinking' ? ' thinking' : ''}`}>
          <AssistantText text={data.text} />
        </div>
      );
    }
    case 'tool_use': {
      const data = (event as StoredEvent<'tool_use'>).data;
      // The one-line summary, as `svc attach` shows it; the whole input one click away.
      return (
        <details className="row tool-use">
          <summary>
            <span className="tag">{data.name}</span> <code>{summarizeInput(data.name, data.input)}</code>
          </summary>
          <pre>{JSON.stringify(data.input, null, 2)}</pre>
        </details>
      );
    }
    case 'tool_result':
      return <ToolResult data={(event as StoredEvent<'tool_result'>).data} />;
    case 'system': {
      const data = (event as StoredEvent<'system'>).data;
      // Read before the checks below narrow `event` away.
      const source = event.source;
      if (isPersonMessage(event)) {
        const images = personMessageImages(event);
        return (
          <div className="row person">
            <span className="tag">{personName(source, you)}:</span> {data.message}
            {images.length > 0 && <MessageImages workerId={event.worker_id} images={images} />}
          </div>
        );
      }
      if (isPersonInterrupt(event))
        return (
          <div className="row person interrupt">
            <span className="tag">{personName(source, you)}</span> asked to stop the turn
          </div>
        );
      return (
        <div className={`row system level-${data.level}`}>
          <span className="tag">{data.level}</span> {data.message}
        </div>
      );
    }
    case 'control_request': {
      const data = (event as StoredEvent<'control_request'>).data;
      return (
        <div className="row control">
          <span className="tag">asks</span> {data.tool_name}: <code>{summarizeInput(data.tool_name, data.input)}</code>
        </div>
      );
    }
    case 'control_response': {
      const data = (event as StoredEvent<'control_response'>).data;
      return (
        <div className={`row control decision-${data.decision}`}>
          <span className="tag">{data.decision === 'allow' ? 'allowed' : 'denied'}</span> by {deciderOf(data, event.source)}
          {data.scope === 'always' ? ' (always)' : ''}
          {data.message ? `: ${data.message}` : ''}
        </div>
      );
    }
    case 'progress': {
      const data = (event as StoredEvent<'progress'>).data;
      return (
        <div className="row progress">
          {formatCount(data.input_tokens)} in · {formatCount(data.output_tokens)} out · {formatCost(data.cost_usd)}
        </div>
      );
    }
    case 'result': {
      const data = (event as StoredEvent<'result'>).data;
      return (
        <div className={`row result${data.is_error ? ' failed' : ''}`}>
          <span className="tag">{data.is_error ? 'failed' : 'done'}</span> {data.text ?? data.subtype}
        </div>
      );
    }
    default:
      return null;
  }
}

/** Who a person's event is from: "You" for the signed-in person, anyone else by their `sub`. */
function personName(source: string | undefined, you: string | undefined): string {
  const person = parseSource(source);
  if (person.kind !== 'person') return 'someone';
  return person.sub === you ? 'You' : person.sub;
}

/** Links in an agent's text leave the console in a new tab, telling the other site nothing. */
const MARKDOWN_COMPONENTS: Components = {
  a: ({ node: _node, ...props }) => <a {...props} target="_blank" rel="noopener noreferrer" />,
};

/**
 * An agent's text as Markdown. Raw HTML in it is dropped (`skipHtml`) and link targets are
 * checked (react-markdown keeps http(s), mailto and relative ones), so the text cannot script the page.
 */
const AssistantText = memo(function AssistantText({ text }: { text: string }) {
  return (
    <Markdown skipHtml components={MARKDOWN_COMPONENTS}>
      {text}
    </Markdown>
  );
});

/** A tool's output: its first lines, the rest folded behind a button. */
function ToolResult({ data }: { data: StoredEvent<'tool_result'>['data'] }) {
  const [open, setOpen] = useState(false);
  const { lines, more } = firstLines(data.content);
  return (
    <div className={`row tool-result${data.is_error ? ' failed' : ''}`}>
      {data.is_error && <span className="tag">error</span>}
      <pre>{open ? data.content : lines.join('\n')}</pre>
      {more > 0 && (
        <button type="button" className="quiet" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'Fold' : `${more} more line${more === 1 ? '' : 's'}`}
        </button>
      )}
    </div>
  );
}
