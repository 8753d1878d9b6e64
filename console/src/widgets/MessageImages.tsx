import { useState } from 'react';
import type { MessageImageRefType } from '@svc/protocol';
import { formatSize, IMAGE_KIND_NAMES } from '../message-images.js';
import { useMessageImage } from '../use-message-image.js';

/** The images of a person's message in the history, as thumbnails: each read from the control plane while its row is shown. */
export function MessageImages({ workerId, images }: { workerId: string; images: readonly MessageImageRefType[] }) {
  return (
    <ul className="message-images" aria-label="Images">
      {images.map((image, index) => (
        <li key={`${index}:${image.sha256}`}>
          <MessageImage workerId={workerId} image={image} number={index + 1} />
        </li>
      ))}
    </ul>
  );
}

/** One image: a thumbnail that a click shows larger (in its row, which the list measures again). */
function MessageImage({ workerId, image, number }: { workerId: string; image: MessageImageRefType; number: number }) {
  const shown = useMessageImage(workerId, image.sha256);
  const [larger, setLarger] = useState(false);
  const what = `Image ${number}, ${IMAGE_KIND_NAMES[image.media_type]}, ${formatSize(image.bytes)}`;
  switch (shown.kind) {
    case 'loading':
      return <span className="message-image placeholder">{what}: loading…</span>;
    case 'gone':
      return <span className="message-image placeholder">{what}: image no longer kept</span>;
    case 'failed':
      return <span className="message-image placeholder">{`${what}: not shown (${shown.reason})`}</span>;
    case 'shown':
      return (
        <button
          type="button"
          className={`message-image${larger ? ' larger' : ''}`}
          aria-label={`${what}: show ${larger ? 'smaller' : 'larger'}`}
          aria-expanded={larger}
          onClick={() => setLarger(!larger)}
        >
          <img src={shown.url} alt="" />
        </button>
      );
  }
}
