import { describe, expect, it } from 'vitest';
import { createBottomFollow, type ScrollPosition } from './bottom-follow.js';

const FOLLOW_WITHIN_PX = 48;
const HEIGHT = 343;
const at = (scrollTop: number, scrollHeight: number): ScrollPosition => ({ scrollTop, clientHeight: HEIGHT, scrollHeight });

/**
 * Scroll events of the worker page's event list as Chromium reported them (390×844, events
 * posted in quick batches, each row three times as tall as its estimate): each is the list's own
 * move to its end, read once the rows it brought in had been measured. Every other one reads as
 * short of the end: the list judged by position alone stopped following there, and stayed.
 */
const OWN_MOVES_TO_THE_END = [
  at(1808, 2151),
  at(2134, 2477),
  at(2397, 2883),
  at(2540, 3026),
  at(2683, 3026),
  at(3272, 3758),
  at(3638, 4124),
  at(3781, 4124),
  at(7704, 8047),
  at(7704, 8333),
  at(14029, 14738),
];

describe('the event list follows its newest rows', () => {
  it('bottom follow — its own moves to the end keep it following, read short of the end because rows grew below', () => {
    const follow = createBottomFollow(FOLLOW_WITHIN_PX);
    for (const position of OWN_MOVES_TO_THE_END) {
      follow.scrolled(position);
      expect(follow.following, JSON.stringify(position)).toBe(true);
    }
  });

  it('bottom follow — a scroll up that leaves the end stops it; back at the end, it follows again', () => {
    const follow = createBottomFollow(FOLLOW_WITHIN_PX);
    follow.scrolled(at(2000, 2343));
    follow.scrolled(at(1500, 2343));
    expect(follow.following).toBe(false);
    // The list grows and the person goes on reading, down but not yet to the end: still not following.
    follow.scrolled(at(1700, 2600));
    expect(follow.following).toBe(false);
    follow.scrolled(at(2257, 2600));
    expect(follow.following).toBe(true);
  });

  it('bottom follow — a scroll up that stays within reach of the end keeps it following', () => {
    const follow = createBottomFollow(FOLLOW_WITHIN_PX);
    follow.scrolled(at(2000, 2343));
    follow.scrolled(at(2000 - FOLLOW_WITHIN_PX, 2343));
    expect(follow.following).toBe(true);
  });

  it('bottom follow — the first scroll event, with nothing before it to compare, does not stop it', () => {
    const follow = createBottomFollow(FOLLOW_WITHIN_PX);
    follow.scrolled(at(0, 5000));
    expect(follow.following).toBe(true);
  });
});
