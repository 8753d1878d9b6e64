import type { AttachedImage } from '../message-images.js';
import { useObjectUrl } from '../use-object-url.js';

/** The images attached to the message being written, as thumbnails, each with a button that takes it off. */
export function AttachedImages({ images, onRemove, disabled }: { images: readonly AttachedImage[]; onRemove: (id: string) => void; disabled: boolean }) {
  return (
    <ul className="attached-images" aria-label="Attached images">
      {images.map((image, index) => (
        <AttachedThumbnail key={image.id} image={image} number={index + 1} onRemove={() => onRemove(image.id)} disabled={disabled} />
      ))}
    </ul>
  );
}

function AttachedThumbnail({ image, number, onRemove, disabled }: { image: AttachedImage; number: number; onRemove: () => void; disabled: boolean }) {
  const url = useObjectUrl(image.file);
  return (
    <li>
      {url && <img src={url} alt={`Image ${number}: ${image.name}`} />}
      <button type="button" className="quiet" aria-label={`Remove image ${number} (${image.name})`} title="Remove" onClick={onRemove} disabled={disabled}>
        ×
      </button>
    </li>
  );
}
