// Publishing a module the way the catalogue does: its templates packed into one tar, the tar put where
// a ref can name it (the object store, or a file for a file:// ref), and the composition written.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { packTar } from 'modern-tar';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';

/** A module's templates by entry name, in archive order: text (written as UTF-8) or bytes kept as they are. */
export type Templates = Record<string, string | Uint8Array>;

/** A module as the catalogue publishes it: its templates and the composition's provisioning. */
export type ModuleSpec = {
  /** The build (default `1`); the archive is named `<module>-<build>.tar`. */
  build?: string;
  /** The archive's entries. */
  templates: Templates;
  /** The composition's provisioning, as written. */
  provisioning: Record<string, unknown>;
  /** Whether the composition says it is published (default true). */
  published?: boolean;
  /** Publish this digest instead of the archive's own (a catalogue mistake). */
  digest?: string;
  /** The composition's rollout (DESIGN §12), when it has one. */
  rollout?: Record<string, unknown>;
};

/** Where an archive goes: a bucket of the object store (an obj:// ref) or a directory (a file:// ref). */
export type ArchiveTarget = { store: ObjectStore; bucket: string } | { dir: string };

/** A composition as the catalogue writes it to mesh-catalog_modules. */
export type Composition = {
  module: string;
  build: string;
  published: boolean;
  archive: { ref: string; digest: string };
  provisioning: Record<string, unknown>;
  rollout?: Record<string, unknown>;
};

/** What publishing a module wrote. */
export type Published = {
  /** The composition written. */
  composition: Composition;
  /** The archive's bytes. */
  tar: Uint8Array;
};

/** Packs the templates into a tar, one regular file per entry, in the record's order. */
export function packTemplates(templates: Templates): Promise<Uint8Array> {
  const enc = new TextEncoder();
  return packTar(
    Object.entries(templates).map(([name, text]) => {
      const body = typeof text === 'string' ? enc.encode(text) : text;
      return { header: { name, size: body.length, type: 'file' as const }, body };
    }),
  );
}

/** The digest a composition gives for these bytes. */
export function archiveDigest(tar: Uint8Array): string {
  return 'sha256:' + createHash('sha256').update(tar).digest('hex');
}

/** Puts the archive under `name` in the target and returns the ref that names it. */
export async function putArchive(target: ArchiveTarget, name: string, tar: Uint8Array): Promise<string> {
  if ('store' in target) {
    await target.store.putBlob({ name }, tar);
    return `obj://${target.bucket}/${name}`;
  }
  mkdirSync(target.dir, { recursive: true });
  const path = join(target.dir, name);
  writeFileSync(path, tar);
  return pathToFileURL(path).href;
}

/** Writes a composition under its module's key, as the catalogue would (refs and digests as given). */
export async function writeComposition(modules: KV, composition: Composition): Promise<void> {
  await modules.put(composition.module, JSON.stringify(composition));
}

/** Packs the module's templates, puts the archive in the target and writes its composition. */
export async function publishModule(modules: KV, target: ArchiveTarget, module: string, spec: ModuleSpec): Promise<Published> {
  const build = spec.build ?? '1';
  const tar = await packTemplates(spec.templates);
  const ref = await putArchive(target, `${module}-${build}.tar`, tar);
  const composition: Composition = {
    module,
    build,
    published: spec.published ?? true,
    archive: { ref, digest: spec.digest ?? archiveDigest(tar) },
    provisioning: spec.provisioning,
    ...(spec.rollout ? { rollout: spec.rollout } : {}),
  };
  await writeComposition(modules, composition);
  return { composition, tar };
}
