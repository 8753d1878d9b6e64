/** Semantic colours; with `NO_COLOR` every token is undefined (Ink then prints no colour). */
export interface Theme {
  accent: string | undefined;
  muted: string | undefined;
  success: string | undefined;
  warning: string | undefined;
  danger: string | undefined;
}

export function createTheme(colour: boolean): Theme {
  return colour
    ? { accent: 'cyan', muted: 'gray', success: 'green', warning: 'yellow', danger: 'red' }
    : { accent: undefined, muted: undefined, success: undefined, warning: undefined, danger: undefined };
}
