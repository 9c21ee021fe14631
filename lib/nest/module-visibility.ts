// Whether a Nest module can inject a token, as Nest's injector decides it: its own providers,
// then what its imports export (through modules they re-export). Global modules are among every
// module's imports once Nest has bound them, so they need no case of their own.

/** What is read of a Nest module (the `host` of a provider's instance wrapper). */
export interface ModuleLike {
  readonly providers: ReadonlyMap<unknown, unknown>;
  readonly exports: ReadonlySet<unknown>;
  readonly imports: ReadonlySet<ModuleLike | undefined>;
  readonly metatype?: { readonly name?: string } | null;
}

/** Whether a provider of `module` can inject `token`. */
export function canInject(module: ModuleLike, token: unknown): boolean {
  return module.providers.has(token) || importsExport(module, token, new Set(), false);
}

/** Whether an import of `module` gives `token`; `traversing`: only the imports `module` re-exports count. */
function importsExport(module: ModuleLike, token: unknown, seen: Set<ModuleLike>, traversing: boolean): boolean {
  for (const imported of module.imports) {
    if (imported === undefined || seen.has(imported)) continue;
    if (traversing && !module.exports.has(imported.metatype)) continue;
    seen.add(imported);
    if (imported.exports.has(token) && imported.providers.has(token)) return true;
    if (importsExport(imported, token, seen, true)) return true;
  }
  return false;
}
