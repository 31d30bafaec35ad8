import { createContext, useContext } from 'react';
import type { Me } from '../api/types';

export interface Session {
  me: Me;
  isAdmin: boolean;
  logout: () => Promise<void>;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a logged-in page');
  return s;
}
