import { homedir } from 'node:os';
import path from 'node:path';

/** What {@link defaultStateDir} looks at. Each defaults to the running process's value. */
export interface StateDirContext {
  /** @default process.env */
  env?: Record<string, string | undefined>;
  /** @default process.platform */
  platform?: NodeJS.Platform;
  /** @default os.homedir() */
  home?: string;
}

/**
 * Where the Node store (`SqliteStore`) keeps its database unless told otherwise:
 *
 * - `$ONCELY_STATE_DIR`, when set;
 * - Linux and other Unixes: `$XDG_STATE_HOME/oncely`, else `~/.local/state/oncely`;
 * - macOS: `~/Library/Application Support/oncely`;
 * - Windows: `%LOCALAPPDATA%\oncely`, else `~\AppData\Local\oncely`.
 *
 * @example
 * defaultStateDir() // '/home/ada/.local/state/oncely'
 */
export function defaultStateDir(context: StateDirContext = {}): string {
  const env = context.env ?? process.env;
  const platform = context.platform ?? process.platform;
  const home = context.home ?? homedir();
  if (env.ONCELY_STATE_DIR) return path.resolve(env.ONCELY_STATE_DIR);
  if (platform === 'win32') {
    return path.win32.join(env.LOCALAPPDATA || path.win32.join(home, 'AppData', 'Local'), 'oncely');
  }
  if (platform === 'darwin') return path.posix.join(home, 'Library', 'Application Support', 'oncely');
  // The XDG spec says to ignore a relative XDG_STATE_HOME.
  const xdg = env.XDG_STATE_HOME && path.posix.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : undefined;
  return path.posix.join(xdg ?? path.posix.join(home, '.local', 'state'), 'oncely');
}
