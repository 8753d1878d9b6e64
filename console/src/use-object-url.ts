import { useEffect, useState } from 'react';

/** A `blob:` URL of `blob` while the caller shows it: revoked when the blob changes or the caller goes, so its bytes can be freed. */
export function useObjectUrl(blob: Blob | undefined): string | undefined {
  const [url, setUrl] = useState<string>();
  useEffect(() => {
    if (!blob) return;
    const created = URL.createObjectURL(blob);
    setUrl(created);
    return () => {
      URL.revokeObjectURL(created);
      setUrl(undefined);
    };
  }, [blob]);
  return url;
}
