import { createContext, useContext } from 'react';
import type { Api } from './api.js';
import type { Auth } from './auth.js';

export interface ConsoleContext {
  auth: Auth;
  api: Api;
}

export const Console = createContext<ConsoleContext | undefined>(undefined);

export function useConsole(): ConsoleContext {
  const context = useContext(Console);
  if (!context) throw new Error('useConsole outside the console');
  return context;
}
