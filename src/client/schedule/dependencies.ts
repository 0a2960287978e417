// Which module named which value at its last fill, by dependency key: a change fills exactly those.

/** The dependency keys each module named, and the modules naming each key. */
export class DependencyIndex {
  readonly #byModule = new Map<string, Set<string>>();
  readonly #byDependency = new Map<string, Set<string>>();

  /** Records what the module's last fill named (replacing what it named before). */
  set(module: string, dependencies: Iterable<string>): void {
    this.forget(module);
    const named = new Set(dependencies);
    this.#byModule.set(module, named);
    for (const dependency of named) {
      const modules = this.#byDependency.get(dependency) ?? this.#byDependency.set(dependency, new Set()).get(dependency)!;
      modules.add(module);
    }
  }

  /** Forgets a module (removed, or failed before it named anything). */
  forget(module: string): void {
    for (const dependency of this.#byModule.get(module) ?? []) {
      const modules = this.#byDependency.get(dependency);
      modules?.delete(module);
      if (modules?.size === 0) this.#byDependency.delete(dependency);
    }
    this.#byModule.delete(module);
  }

  /** The modules whose last fill named any of `dependencies`. */
  modulesNaming(dependencies: readonly string[]): Set<string> {
    const out = new Set<string>();
    for (const dependency of dependencies) for (const module of this.#byDependency.get(dependency) ?? []) out.add(module);
    return out;
  }
}
