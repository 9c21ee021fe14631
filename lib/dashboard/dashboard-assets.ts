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
    page: (base) => ({ type: 'text/html; charset=utf-8', body: Buffer.from(html.replaceAll('%BASE%', escapeAttribute(base))) }),
    script,
    style,
  };
}

function read(name: string): Buffer {
  return readFileSync(new URL(`./assets/${name}`, import.meta.url));
}

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
