import { afterEach, describe, expect, it, vi } from 'vitest';

afterEach(() => {
  vi.restoreAllMocks();
  vi.resetModules();
});

/** `node:sqlite` as a later Node may ship it, with `DatabaseSync` renamed or gone. */
async function driverWith(exports: Record<string, unknown> | undefined) {
  vi.spyOn(process, 'getBuiltinModule').mockImplementation(((id: string) =>
    id === 'node:sqlite' ? exports : undefined) as typeof process.getBuiltinModule);
  return import('../node/sqlite-driver.js');
}

describe('node:sqlite driver', () => {
  it('uses Database once Node renames DatabaseSync (DEP0210), and DatabaseSync before', async () => {
    class Database {}
    class DatabaseSync {}
    expect((await driverWith({ Database, DatabaseSync })).databaseClass()).toBe(Database);
    vi.resetModules();
    expect((await driverWith({ DatabaseSync })).databaseClass()).toBe(DatabaseSync);
  });

  it('says which Node it needs when node:sqlite is missing', async () => {
    await expect((async () => (await driverWith(undefined)).databaseClass())()).rejects.toThrow(/Node >= 22\.13/);
  });
});
