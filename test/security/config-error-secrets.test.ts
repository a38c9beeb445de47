// A config error names the key it refuses but never prints a value that could be a secret: a
// secret put under the wrong key (a typo, a misspelt nested key, a string where an object
// belongs) would otherwise reach the terminal, the logs and CI output.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { InvalidConfigError } from '../../packages/core/src/index.js';
import { parseConfigFile } from '../../packages/doyen/src/config-file.js';
import { startNode, validateNodeConfig } from '../../packages/doyen/src/index.js';
import { thrownBy } from '../support/thrown.js';

const SECRET = `s3cr3t-${randomBytes(12).toString('hex')}`;

/** The message of the InvalidConfigError `run` throws (the positive control: it does throw). */
const refusal = (run: () => unknown): string => thrownBy(run, InvalidConfigError).message;

const json = (value: unknown) => JSON.stringify(value, null, 2);

describe('config errors never echo a secret put under the wrong key', () => {
  const cases: readonly (readonly [string, string, string, RegExp])[] = [
    ['a misspelt top-level key', 'n.json', json({ cluster: 'c', secrt: SECRET }), /secrt: unknown setting/],
    ['the same in YAML', 'n.yaml', `cluster: c\nsecrt: ${SECRET}\n`, /secrt: unknown setting/],
    [
      'a misspelt nested key',
      'n.json',
      json({ wire: { secrett: SECRET } }),
      /wire\.secrett: unknown setting/,
    ],
    [
      'a secret-looking key deep inside',
      'n.json',
      json({ clusterOptions: { sbr: { token: SECRET } } }),
      /clusterOptions\.sbr\.token: unknown setting/,
    ],
    [
      'a string where an object belongs',
      'n.json',
      json({ httpTls: SECRET }),
      /httpTls: expected an object, got a string/,
    ],
    [
      'a string where a number belongs',
      'n.json',
      json({ port: SECRET }),
      /port: expected an integer, got a string/,
    ],
    [
      'an object with a secret where a string belongs',
      'n.json',
      json({ httpTls: { keyFile: { passphrase: SECRET } } }),
      /httpTls\.keyFile: expected a string, got an object/,
    ],
    [
      'an object with a secret where seeds belong',
      'n.json',
      json({ seeds: { secret: SECRET } }),
      /seeds: expected .*, got an object/,
    ],
    [
      'an enumeration given a secret',
      'n.json',
      json({ logLevel: SECRET }),
      /logLevel: expected one of .*got a string/,
    ],
    [
      'JSON that does not parse around the secret',
      'n.json',
      `{"secret": ${SECRET}}`,
      /n\.json: not valid JSON/,
    ],
    [
      'JSON with trailing text after a secret',
      'n.json',
      `{"cluster": "c"} ${SECRET}`,
      /n\.json: not valid JSON at line 1, column 18/,
    ],
    [
      'YAML that does not parse around the secret',
      'n.yaml',
      `secrt: [${SECRET}\n`,
      /n\.yaml: .* at line \d+, column \d+$/,
    ],
  ];
  for (const [name, path, text, names] of cases)
    it(`${name}: names where, not the value`, () => {
      const message = refusal(() => parseConfigFile(text, path));
      expect(message).toMatch(names);
      expect(message).not.toContain(SECRET);
      expect(message).not.toContain(SECRET.slice(0, 8));
    });

  it('values that cannot be secrets are still shown, so the usual mistake reads plainly', () => {
    expect(refusal(() => parseConfigFile(json({ port: '9000' }), 'n.json'))).toMatch(
      /port: expected an integer, got "9000"/,
    );
    expect(refusal(() => parseConfigFile(json({ insecure: 1 }), 'n.json'))).toMatch(
      /insecure: expected a boolean, got 1/,
    );
  });

  it('positive control: the secret is in the input each message was made from', () => {
    // without the rule, the parser's own message and a naive echo would carry it
    let parserMessage = '';
    try {
      JSON.parse(`{"secret": ${SECRET}}`);
    } catch (error) {
      parserMessage = (error as Error).message;
    }
    expect(parserMessage).toContain(SECRET.slice(0, 8));
    let yamlMessage = '';
    try {
      parseYaml(`secrt: [${SECRET}\n`);
    } catch (error) {
      yamlMessage = (error as Error).message;
    }
    expect(yamlMessage).toContain(SECRET);
    expect(JSON.stringify({ passphrase: SECRET })).toContain(SECRET);
  });

  it('startNode: a secret given as the port, the coordinator or the inspector URL is not echoed', async () => {
    const base = {
      cluster: 'c',
      host: '127.0.0.1',
      port: 0,
      seeds: [{ host: '127.0.0.1', port: 1 }],
      insecure: true,
    };
    for (const bad of [
      { port: SECRET as never },
      { coordinator: SECRET as never },
      { inspect: { url: `${SECRET}://x` } },
    ]) {
      const message = refusal(() => validateNodeConfig({ ...base, ...bad }));
      expect(message).not.toContain(SECRET);
    }
    await expect(startNode({ ...base, coordinator: SECRET as never })).rejects.toThrow(/coordinator must be/);
  });
});
