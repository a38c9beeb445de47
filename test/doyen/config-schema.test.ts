import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { configFileJsonSchema, parseConfigFile } from '../../packages/doyen/src/config-file.js';

const PUBLISHED = new URL('../../packages/doyen/config.schema.json', import.meta.url);

/** Files the node must accept and refuse; the published schema must say the same of each. */
const ACCEPTED: unknown[] = [
  {},
  {
    cluster: 'c',
    port: 1,
    seeds: ['127.0.0.1:1', { host: '127.0.0.1', port: 2 }],
    clusterOptions: { downing: 'static-quorum', sbr: { downAllWhenUnstableMs: 'off' } },
    wire: { tls: { caFile: 'a', certFile: 'b', keyFile: 'c' } },
    inspect: true,
  },
  { seeds: '127.0.0.1:1,127.0.0.1:2', inspect: { url: 'ws://127.0.0.1:1' }, logLevel: 'warn' },
];
const REFUSED: unknown[] = [
  { httpport: 9999 },
  { clusterOptions: { downnig: 'auto' } },
  { port: '9000' },
  { port: 1.5 },
  { seeds: [{ host: 'a', port: 'x' }] },
  { seeds: [{ host: 'a', port: 1, extra: true }] },
  { onDowned: 'reboot' },
  { clusterOptions: { sbr: { downAllWhenUnstableMs: 'never' } } },
  [1],
  'text',
];

describe('the published JSON Schema of --config files', () => {
  it('is the schema the node checks files against (regenerate: node packages/doyen/dist/bin.js config-schema > packages/doyen/config.schema.json)', () => {
    expect(JSON.parse(readFileSync(PUBLISHED, 'utf8'))).toEqual(configFileJsonSchema());
  });

  it('is valid draft-07 and, read by another validator (ajv), accepts and refuses what the node does', () => {
    const ajv = new Ajv({ strict: true, allErrors: true });
    const validate = ajv.compile(JSON.parse(readFileSync(PUBLISHED, 'utf8')));
    const nodeAccepts = (file: unknown) => {
      try {
        parseConfigFile(JSON.stringify(file), 'c.json');
        return true;
      } catch {
        return false;
      }
    };
    for (const file of ACCEPTED) {
      expect(validate(file), JSON.stringify(validate.errors)).toBe(true);
      expect(nodeAccepts(file)).toBe(true);
    }
    for (const file of REFUSED) {
      expect(validate(file), JSON.stringify(file)).toBe(false);
      expect(nodeAccepts(file), JSON.stringify(file)).toBe(false);
    }
  });
});

describe('YAML config files', () => {
  it('reads .yaml and .yml files like JSON ones', () => {
    const yaml = [
      'cluster: shop',
      'port: 2552',
      'seeds:',
      '  - 10.0.0.1:2552',
      '  - { host: 10.0.0.2, port: 2552 }',
      'roles: [backend]',
      'clusterOptions:',
      '  downing: keep-majority',
      '  sbr: { stableAfterMs: 7000 }',
    ].join('\n');
    const fromYaml = parseConfigFile(yaml, 'node.yaml');
    expect(fromYaml).toEqual(
      parseConfigFile(
        JSON.stringify({
          cluster: 'shop',
          port: 2552,
          seeds: ['10.0.0.1:2552', { host: '10.0.0.2', port: 2552 }],
          roles: ['backend'],
          clusterOptions: { downing: 'keep-majority', sbr: { stableAfterMs: 7000 } },
        }),
        'node.json',
      ),
    );
    expect(fromYaml.seeds).toEqual([
      { host: '10.0.0.1', port: 2552 },
      { host: '10.0.0.2', port: 2552 },
    ]);
    expect(parseConfigFile('httpPort: 8558\n', 'n.YML').httpPort).toBe(8558);
  });

  it('refuses unknown keys, wrong types, secrets and broken YAML, naming the file and the path', () => {
    expect(() => parseConfigFile('clusterOptions:\n  downnig: auto\n', 'n.yaml')).toThrow(
      /n\.yaml: clusterOptions\.downnig: unknown setting/,
    );
    expect(() => parseConfigFile('port: "9000"\n', 'n.yaml')).toThrow(
      /n\.yaml: port: expected an integer, got "9000"/,
    );
    expect(() => parseConfigFile('secret: hunter2\n', 'n.yaml')).toThrow(/secret: secrets are not read/);
    expect(() => parseConfigFile('port: [1\n', 'n.yaml')).toThrow(/config n\.yaml: /);
    // a YAML file is not read as JSON, nor a JSON file as YAML
    expect(() => parseConfigFile('port: 1\n', 'n.json')).toThrow(/config n\.json: /);
  });

  it('refuses a billion-laughs file (aliases are bounded) instead of expanding it', () => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 12; i++) {
      const prev = String.fromCharCode(96 + i);
      const next = String.fromCharCode(97 + i);
      lines.push(`${next}: &${next} [${Array(10).fill(`*${prev}`).join(', ')}]`);
    }
    expect(() => parseConfigFile(lines.join('\n'), 'bomb.yaml')).toThrow(
      /config bomb\.yaml: Excessive alias count/,
    );
  });
});
