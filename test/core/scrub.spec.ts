import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { inspect } from 'node:util';
import { scrubbingLogger } from '../../lib/core/common/logger.js';
import { scrub, scrubbedCause } from '../../lib/core/common/scrub.js';
import { RecordingLogger } from '../support/harness.js';
import { CREDENTIAL_FORMS, SECRET } from '../support/credential-forms.js';

describe('scrub', () => {
  it.each(CREDENTIAL_FORMS.map((f) => [f.name, f.text(SECRET)]))('hides the secret of %s', (_name, text) => {
    const clean = scrub(text);
    expect(clean).not.toContain(SECRET);
    expect(clean).not.toContain('pa55'); // no piece of it either
    expect(clean).toContain('***');
  });

  it.each([
    ['redis://default:s3cr3t@cache:6379/0', 'redis://default:***@cache:6379/0'],
    ['postgresql://u:p%40ss@h/db', 'postgresql://u:***@h/db'],
    ['postgres://app:p@ss/w:rd@db.internal:5432/orders', 'postgres://app:***@db.internal:5432/orders'],
    ['https://ghp_0123456789abcdef@github.com/x.git', 'https://***@github.com/x.git'],
    [
      'DefaultEndpointsProtocol=https;AccountName=dev;AccountKey=abc+/==;EndpointSuffix=core',
      'DefaultEndpointsProtocol=https;AccountName=dev;AccountKey=***;EndpointSuffix=core',
    ],
    [
      'https://acct.blob.core.windows.net/c?sv=2024&sig=AbC%2Fd&se=1',
      'https://acct.blob.core.windows.net/c?sv=2024&sig=***&se=1',
    ],
    ['host=db user=app password=pw dbname=x', 'host=db user=app password=*** dbname=x'],
    ["host=db password='a b' dbname=x", "host=db password='***' dbname=x"],
    ['{"user":"a","password":"pw"}', '{"user":"a","password":"***"}'],
    ["{ user: 'a', password: \"it's\" }", '{ user: \'a\', password: "***" }'],
    ['Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.x.y', 'Authorization: Bearer ***'],
    ['authorization: Basic dXNlcjpwYXNz', 'authorization: Basic ***'],
    ["command: { name: 'auth', args: [ 'default', 'pw' ] }", "command: { name: 'auth', args: [***] }"],
    ['connect ECONNREFUSED 127.0.0.1:5432', 'connect ECONNREFUSED 127.0.0.1:5432'],
    ['password authentication failed for user "app"', 'password authentication failed for user "app"'],
    [
      'pool "orders": create failed: getaddrinfo ENOTFOUND db',
      'pool "orders": create failed: getaddrinfo ENOTFOUND db',
    ],
  ])('turns %s into %s', (text, clean) => {
    expect(scrub(text)).toBe(clean);
  });

  it('hides any password, whatever it holds, in every form that can carry it', () => {
    const printable = fc.string({
      unit: fc.constantFrom(...'abcXYZ0189@/:;#?%+=&!$*()[]{}<>,. \'"`\\-_~'.split('')),
      minLength: 0,
      maxLength: 24,
    });
    fc.assert(
      fc.property(printable, fc.constantFrom(...CREDENTIAL_FORMS), (middle, form) => {
        const secret = `Zq8${middle}Zq9`;
        fc.pre(form.carries(secret));
        const clean = scrub(form.text(secret));
        // Neither the password nor its distinctive ends may survive.
        expect(clean).not.toContain('Zq8');
        expect(clean).not.toContain('Zq9');
      }),
      { numRuns: 3_000 },
    );
  });

  it('takes linear time on hostile text (no catastrophic backtracking)', () => {
    for (const unit of ['a', 'a-', 'password', 'a://', '"', '\\"', "password='", 'Bearer ', 'x@']) {
      const text = unit.repeat(Math.ceil(200_000 / unit.length));
      const began = performance.now();
      scrub(text);
      // A generous bound: quadratic work on 200 KB takes minutes, linear milliseconds.
      expect(performance.now() - began).toBeLessThan(2_000);
    }
  });
});

describe('scrubbedCause', () => {
  it('keeps the name, code and chain of an error, with every text scrubbed', () => {
    const inner = new Error(`connect to redis://:${SECRET}@cache failed`);
    const outer = Object.assign(new Error(`create failed: password=${SECRET}`, { cause: inner }), {
      code: 'ECONNREFUSED',
    });
    outer.name = 'DriverError';
    const copy = scrubbedCause(outer) as Error & { code: string };
    expect(copy).toBeInstanceOf(Error);
    expect(copy.name).toBe('DriverError');
    expect(copy.code).toBe('ECONNREFUSED');
    expect((copy.cause as Error).message).toBe('connect to redis://:***@cache failed');
    expect(inspect(copy)).not.toContain(SECRET);
  });

  it('turns a thrown value that is not an error into scrubbed text', () => {
    expect(scrubbedCause({ password: SECRET })).toBe('{"password":"***"}');
    expect(scrubbedCause(`token=${SECRET}`)).toBe('token=***');
    const cyclic: Record<string, unknown> = { password: SECRET };
    cyclic.self = cyclic;
    expect(String(scrubbedCause(cyclic))).not.toContain(SECRET);
  });
});

describe('scrubbingLogger', () => {
  it('scrubs every level, keeps the levels the logger has, and wraps once', () => {
    const seen = new RecordingLogger();
    const logger = scrubbingLogger(seen);
    logger.info!(`up: amqp://guest:${SECRET}@mq`);
    logger.warn(`PGPASSWORD=${SECRET}`);
    logger.error(`sslpassword=${SECRET}`, new Error(`password=${SECRET}`));
    logger.debug!(`x-api-key: ${SECRET}`);
    expect([...seen.infos, ...seen.warnings, ...seen.errors, ...seen.debugs].join('\n')).not.toContain(SECRET);
    expect(scrubbingLogger(logger)).toBe(logger);
    expect(scrubbingLogger({ warn: () => {}, error: () => {} }).info).toBeUndefined();
  });
});
