import { readFileSync } from 'node:fs';

/** One file of the page, ready to send. */
export interface DashboardAsset {
  readonly type: string;
  readonly body: Buffer;
}

/** The page's files, shipped in the package next to this module (`assets/`): no CDN, no build step. */
export interface DashboardAssets {
  /** The page, its links made to point under `base` (where the page was asked for). */
  page(base: string): DashboardAsset;
  readonly script: DashboardAsset;
  readonly style: DashboardAsset;
}

let loaded: { html: string; script: DashboardAsset; style: DashboardAsset } | undefined;

/** Reads the files once per process. */
export function dashboardAssets(): DashboardAssets {
  loaded ??= {
    html: read('index.html').toString('utf8'),
    script: { type: 'text/javascript; charset=utf-8', body: read('dashboard.js') },
    style: { type: 'text/css; charset=utf-8', body: read('dashboard.css') },
  };
  const { html, script, style } = loaded;
  return {
    page: (base) => ({
      type: 'text/html; charset=utf-8',
      body: Buffer.from(html.replaceAll('%BASE%', escapeAttribute(base))),
    }),
    script,
    style,
  };
}

/** Next to this module (the sources, or a build that copied them), else the package's sources (a build that did not). */
const PLACES = ['./assets/', '../../lib/dashboard/assets/'];

function read(name: string): Buffer {
  for (const place of PLACES) {
    try {
      return readFileSync(new URL(`${place}${name}`, import.meta.url));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  throw new Error(
    `nestjs-shared-pool/dashboard: its page file ${name} is missing from the package (looked in ${PLACES.join(' and ')} next to ${import.meta.url}); reinstall the package`,
  );
}

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
