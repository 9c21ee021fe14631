import { inspect } from 'node:util';

/** A password as a test plants it: distinctive, with the characters that broke scrubbers (`@`, `/`, a space is in SPACED). */
export const SECRET = 'pa55@w/rd-Zq8';

/** One way a credential appears in an error's text; `carries`: whether the form can hold that password at all. */
export interface CredentialForm {
  readonly name: string;
  readonly text: (secret: string) => string;
  readonly carries: (secret: string) => boolean;
}

const any = () => true;
const bare = (s: string) => !/[\s,;&}\]'"`\\]/.test(s);
const inUrl = (s: string) => !/[\s'"`<>\\]/.test(s);
const single = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * The forms issue 46 found served verbatim, and the credential forms of the clients this project
 * ships connectors for (pg, mysql2, ioredis, amqplib, Azure, HTTP).
 */
export const CREDENTIAL_FORMS: readonly CredentialForm[] = [
  { name: 'a URL', text: (s) => `connect failed: postgres://app:${s}@db:5432/orders`, carries: inUrl },
  {
    name: 'a URL whose password holds @ and /',
    text: (s) => `postgres://app:x@y/${s}@db/orders timed out`,
    carries: inUrl,
  },
  { name: 'PGPASSWORD=', text: (s) => `env: PGHOST=db PGPASSWORD=${s} PGUSER=app`, carries: bare },
  { name: 'sslpassword=', text: (s) => `host=db sslpassword=${s} sslmode=verify-full`, carries: bare },
  {
    name: "an object as Node prints it ({ password: '…' })",
    text: (s) => `bad config ${inspect({ host: 'db', password: s })}`,
    carries: any,
  },
  { name: 'password: …', text: (s) => `login with password: ${s} refused`, carries: bare },
  { name: 'password = …', text: (s) => `password = ${s}`, carries: bare },
  {
    name: 'a quoted password with a space',
    text: (s) => `host=db password='${s} x' dbname=orders`,
    carries: (s) => !/['\\]/.test(s),
  },
  { name: 'a short Bearer token', text: (s) => `401 for Bearer ${s}`, carries: (s) => bare(s) && !/[)]/.test(s) },
  { name: 'x-api-key: …', text: (s) => `request headers x-api-key: ${s}`, carries: bare },
  { name: "{'apiKey': '…'}", text: (s) => `payload {'apiKey': ${single(s)}}`, carries: any },
  { name: 'JSON', text: (s) => `body ${JSON.stringify({ user: 'app', password: s })}`, carries: any },
  {
    name: 'JSON inside a JSON string',
    text: (s) => JSON.stringify({ error: JSON.stringify({ password: s }) }),
    carries: any,
  },
  { name: 'libpq keywords', text: (s) => `host=db user=app password=${s} dbname=orders`, carries: bare },
  {
    name: 'a pg config object',
    text: (s) => inspect({ host: 'db', user: 'app', password: s, ssl: { key: 'k', passphrase: s } }),
    carries: any,
  },
  { name: 'a mysql URL', text: (s) => `mysql://root:${s}@127.0.0.1:3306/test`, carries: inUrl },
  {
    name: 'a mysql2 config object',
    text: (s) => inspect({ host: '127.0.0.1', user: 'root', password: s, database: 'test' }),
    carries: any,
  },
  { name: 'a redis URL', text: (s) => `redis://:${s}@cache:6379/0`, carries: inUrl },
  { name: 'a rediss URL with a user', text: (s) => `rediss://default:${s}@cache:6380`, carries: inUrl },
  {
    name: "ioredis's failed AUTH command",
    text: (s) => `ReplyError: WRONGPASS ${inspect({ command: { name: 'auth', args: ['default', s] } })}`,
    carries: any,
  },
  {
    name: 'an ioredis options object',
    text: (s) => inspect({ host: 'cache', port: 6379, username: 'default', password: s }),
    carries: any,
  },
  { name: 'an AMQP URL', text: (s) => `amqp://guest:${s}@mq:5672/vhost`, carries: inUrl },
  {
    name: 'an amqplib options object',
    text: (s) => inspect({ protocol: 'amqp', hostname: 'mq', username: 'guest', password: s }),
    carries: any,
  },
  {
    name: 'an Azure connection string',
    text: (s) => `DefaultEndpointsProtocol=https;AccountName=dev;AccountKey=${s};EndpointSuffix=core`,
    carries: (s) => bare(s),
  },
  {
    name: 'an Azure SAS',
    text: (s) => `https://dev.blob.core.windows.net/c?sv=2024&sig=${s}&se=1`,
    carries: (s) => bare(s) && !/[#?]/.test(s),
  },
  { name: 'an Authorization header', text: (s) => `authorization: Basic ${s}`, carries: bare },
  {
    name: 'HTTP headers as Node prints them',
    text: (s) => inspect({ authorization: `Bearer ${s}`, 'x-api-key': s, cookie: `sid=${s}` }),
    carries: any,
  },
  {
    name: 'client_secret=',
    text: (s) => `grant_type=client_credentials&client_id=app&client_secret=${s}`,
    carries: bare,
  },
];
