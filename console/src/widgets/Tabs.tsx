import { useRef, type KeyboardEvent } from 'react';

export interface Tab<Id extends string> {
  id: Id;
  label: string;
}

/** The key of a tab's button and of its panel (`tab-<id>`, `panel-<id>`): the page's panel names itself by them. */
export const tabIds = (id: string) => ({ tab: `tab-${id}`, panel: `panel-${id}` });

/**
 * A tab list as WAI-ARIA's tabs pattern has it: only the selected tab is in the Tab order; the
 * arrow keys, Home and End move to another tab and select it.
 */
export function Tabs<Id extends string>({
  label,
  tabs,
  selected,
  onSelect,
}: {
  label: string;
  tabs: ReadonlyArray<Tab<Id>>;
  selected: Id;
  onSelect: (id: Id) => void;
}) {
  const buttons = useRef(new Map<Id, HTMLButtonElement>());
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    const index = tabs.findIndex((tab) => tab.id === selected);
    const moves: Record<string, number> = { ArrowRight: index + 1, ArrowLeft: index - 1 + tabs.length, Home: 0, End: tabs.length - 1 };
    const to = moves[event.key];
    if (to === undefined) return;
    event.preventDefault();
    const next = tabs[to % tabs.length]!.id;
    onSelect(next);
    buttons.current.get(next)?.focus();
  };
  return (
    <div role="tablist" aria-label={label} className="tabs" onKeyDown={onKeyDown}>
      {tabs.map((tab) => (
        <button
          key={tab.id}
          ref={(button) => {
            if (button) buttons.current.set(tab.id, button);
            else buttons.current.delete(tab.id);
          }}
          type="button"
          role="tab"
          id={tabIds(tab.id).tab}
          aria-controls={tabIds(tab.id).panel}
          aria-selected={tab.id === selected}
          tabIndex={tab.id === selected ? 0 : -1}
          onClick={() => onSelect(tab.id)}
        >
          {tab.label}
        </button>
      ))}
    </div>
  );
}
