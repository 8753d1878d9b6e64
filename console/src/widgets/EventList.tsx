import { useLayoutEffect, useRef, useState } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { formatCount, type WorkerView } from '@svc/viewer';
import { createBottomFollow } from '../bottom-follow.js';
import { EventRow } from './EventRow.js';

/** A row's height before it is measured (most rows are one line). */
const ESTIMATED_ROW_PX = 40;
/** Earlier events are read when the top of what is held comes this close. */
const READ_EARLIER_WITHIN_PX = 600;
/** At the bottom, give or take this much: the list follows new events. */
const FOLLOW_WITHIN_PX = 48;

/**
 * The history, virtualized: only the rows on screen (and a few beyond) are in the page, however
 * many the view holds. It opens at the end and follows new events, and its rows as they are
 * measured, until the person scrolls up (`createBottomFollow`); scrolling up reads earlier pages
 * (`readEarlier`) and keeps what is on screen in place.
 * `you`: the signed-in person's `sub` (their own messages read "You").
 */
export function EventList({ view, readEarlier, you }: { view: WorkerView; readEarlier: () => Promise<number>; you?: string | undefined }) {
  const scroller = useRef<HTMLDivElement>(null);
  const events = view.events;
  const virtualizer = useVirtualizer({
    count: events.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ESTIMATED_ROW_PX,
    getItemKey: (index) => events[index]!.id,
    overscan: 8,
  });
  const [follow] = useState(() => createBottomFollow(FOLLOW_WITHIN_PX));
  const shownFirst = useRef<string | undefined>(undefined);
  // Rows are measured once drawn, mostly taller or shorter than estimated: the end moves with them.
  const totalSize = virtualizer.getTotalSize();

  useLayoutEffect(() => {
    const element = scroller.current;
    const first = events[0]?.id;
    if (!element || first === undefined) return;
    // Earlier events went in front: move down by their (estimated) height so the rows on screen stay put.
    if (shownFirst.current !== undefined && first !== shownFirst.current) {
      const added = Number(BigInt(shownFirst.current) - BigInt(first));
      if (added > 0 && !follow.following) element.scrollTop += added * ESTIMATED_ROW_PX;
    }
    shownFirst.current = first;
    if (follow.following) virtualizer.scrollToEnd();
  }, [events.length, events, totalSize, follow, virtualizer]);

  const onScroll = () => {
    const element = scroller.current;
    if (!element) return;
    follow.scrolled(element);
    if (element.scrollTop < READ_EARLIER_WITHIN_PX && view.hasEarlier) void readEarlier();
  };

  const total = BigInt(view.lastId);
  return (
    <>
      <p className="history" aria-live="off">
        {view.hasEarlier
          ? `${formatCount(events.length)} of ${formatCount(Number(total))} events; scroll up for earlier ones`
          : `${formatCount(events.length)} event${events.length === 1 ? '' : 's'}, from the first`}
      </p>
      <div ref={scroller} className="events" role="log" aria-label="Events" tabIndex={0} onScroll={onScroll}>
        <ol style={{ height: virtualizer.getTotalSize() }}>
          {virtualizer.getVirtualItems().map((item) => {
            const event = events[item.index]!;
            return (
              <li
                key={item.key}
                data-index={item.index}
                data-event-id={event.id}
                ref={virtualizer.measureElement}
                style={{ transform: `translateY(${item.start}px)` }}
              >
                <EventRow event={event} you={you} />
              </li>
            );
          })}
        </ol>
      </div>
    </>
  );
}
