// Lets Node run the TypeScript sources directly: they import each other as `./x.js`
// (TypeScript's convention), so a missing relative `.js` resolves to its `.ts`.
// Import this module before dynamically importing anything under src/, browser/ or node/.
import { registerHooks } from 'node:module';

registerHooks({
  resolve(specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context);
    } catch (error) {
      if (!specifier.startsWith('.') || !specifier.endsWith('.js')) throw error;
      return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
    }
  },
});
