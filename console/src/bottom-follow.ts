/** Where a scrolled element stands: how far down it is scrolled, its height and its content's. */
export interface ScrollPosition {
  scrollTop: number;
  clientHeight: number;
  scrollHeight: number;
}

/** Whether a list follows its newest rows, told of each of its scroll events. */
export interface BottomFollow {
  readonly following: boolean;
  scrolled(position: ScrollPosition): void;
}

/**
 * Whether a list that grows at its end (a worker's events) keeps its newest rows in view: until
 * a scroll up leaves it away from its end (within `withinPx`); once back at the end, it follows
 * again. A scroll down never stops it. Those are the list's own moves to its end, and a scroll
 * event reports where the list is when the browser gets to it: by then rows measured taller than
 * estimated may have grown the content below, and the move reads as one that stopped short of the
 * end. Judged by position alone, the list stopped following whenever events came at that moment.
 */
export function createBottomFollow(withinPx: number): BottomFollow {
  let following = true;
  let lastTop: number | undefined;
  return {
    get following() {
      return following;
    },
    scrolled({ scrollTop, clientHeight, scrollHeight }) {
      const movedUp = lastTop !== undefined && scrollTop < lastTop;
      lastTop = scrollTop;
      if (scrollTop + clientHeight >= scrollHeight - withinPx) following = true;
      else if (movedUp) following = false;
    },
  };
}
