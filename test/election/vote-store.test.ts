import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FileVoteStore,
  MemoryVoteStore,
  VoteStoreCorruptError,
} from '../../packages/election/src/vote-store.js';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'doyen-votes-'));
  dirs.push(dir);
  return dir;
};

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('vote stores', () => {
  it('MemoryVoteStore starts at generation 0 without a vote and keeps the last save', () => {
    const store = new MemoryVoteStore();
    expect(store.load()).toEqual({ generation: 0, votedFor: undefined });
    store.save({ generation: 3, votedFor: '10.0.0.1:2552' });
    expect(store.load()).toEqual({ generation: 3, votedFor: '10.0.0.1:2552' });
  });

  it('FileVoteStore: a missing file is generation 0; saves survive a new store on the same path', () => {
    const path = join(tempDir(), 'vote.json');
    expect(new FileVoteStore(path).load()).toEqual({ generation: 0, votedFor: undefined });
    new FileVoteStore(path).save({ generation: 7, votedFor: '10.0.0.2:2552' });
    expect(new FileVoteStore(path).load()).toEqual({ generation: 7, votedFor: '10.0.0.2:2552' });
    new FileVoteStore(path).save({ generation: 8, votedFor: undefined });
    expect(new FileVoteStore(path).load()).toEqual({ generation: 8, votedFor: undefined });
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ generation: 8, votedFor: null });
  });

  it('FileVoteStore replaces the file through a temp file (nothing left behind)', () => {
    const dir = tempDir();
    const path = join(dir, 'vote.json');
    const store = new FileVoteStore(path);
    for (let g = 1; g <= 5; g++) store.save({ generation: g, votedFor: '10.0.0.3:2552' });
    expect(readdirSync(dir)).toEqual(['vote.json']);
    expect(store.load().generation).toBe(5);
  });

  it('FileVoteStore refuses a corrupt file with a typed error naming the path', () => {
    const dir = tempDir();
    const cases = [
      '{not json',
      '[]',
      '{"generation":-1,"votedFor":null}',
      '{"generation":2,"votedFor":5}',
      'null',
    ];
    for (const [i, body] of cases.entries()) {
      const path = join(dir, `vote-${i}.json`);
      writeFileSync(path, body);
      const load = () => new FileVoteStore(path).load();
      expect(load, body).toThrow(VoteStoreCorruptError);
      expect(load, body).toThrow(path);
      try {
        load();
      } catch (error) {
        expect((error as VoteStoreCorruptError).code).toBe('vote-store-corrupt');
        expect((error as VoteStoreCorruptError).path).toBe(path);
      }
    }
  });

  it('FileVoteStore surfaces other I/O errors instead of pretending it never voted', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'vote.json'));
    const load = () => new FileVoteStore(join(dir, 'vote.json')).load();
    expect(load).toThrow();
    expect(load).not.toThrow(VoteStoreCorruptError);
    const save = () =>
      new FileVoteStore(join(dir, 'missing', 'vote.json')).save({ generation: 1, votedFor: undefined });
    expect(save).toThrow();
  });
});
