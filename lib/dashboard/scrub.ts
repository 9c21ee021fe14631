// What the dashboard shows of error texts and names: credentials taken out. Connect errors often
// embed the URL or connection string they failed on (`redis://user:secret@host`, an Azure
// `AccountKey=...`, a SAS `sig=...`, PostgreSQL's `password=...`).

const HIDDEN = '***';

/** `text` with the credentials it may carry replaced by `***`. */
export function scrub(text: string): string {
  return (
    text
      // user:password@ in any URL (and user@ alone keeps the user, which is no secret)
      .replace(/([a-z][a-z0-9+.-]*:\/\/)([^\s/@:]*):([^\s/@]*)@/gi, `$1$2:${HIDDEN}@`)
      // key=value secrets in connection strings and query strings
      .replace(/\b(AccountKey|SharedAccessSignature|SharedAccessKey|password|passwd|pwd|secret|token|access_token|api[-_]?key|sig|client_secret)=([^;&\s'"]+)/gi, `$1=${HIDDEN}`)
      // "password": "..." in JSON-ish text
      .replace(/("(?:password|secret|token|apiKey|api_key|accountKey)"\s*:\s*")([^"]*)(")/gi, `$1${HIDDEN}$3`)
      // Authorization headers
      .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9+/=._~-]{8,}/g, `$1 ${HIDDEN}`)
  );
}

/** `text` scrubbed, or null when there is none. */
export function scrubbed(text: string | undefined | null): string | null {
  return text === undefined || text === null ? null : scrub(text);
}
