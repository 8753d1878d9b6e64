import { useStdout } from 'ink';
import { useEffect, useState } from 'react';

/** The terminal's rows and columns, following resizes. */
export function useTerminalSize(): { rows: number; columns: number } {
  const { stdout } = useStdout();
  const tty = stdout as NodeJS.WriteStream;
  const read = () => ({ rows: tty.rows || 24, columns: tty.columns || 80 });
  const [size, setSize] = useState(read);
  useEffect(() => {
    const onResize = () => setSize(read());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout]);
  return size;
}
