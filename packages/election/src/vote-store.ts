import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { DoyenError } from '@doyen/core';
import type { PersistedVote, VoteStore } from './election.js';

const NONE: PersistedVote = { generation: 0, votedFor: undefined };

/** Keeps the vote for the life of the process: enough when a restart starts a fresh process anyway. */
export class MemoryVoteStore implements VoteStore {
  private vote: PersistedVote = NONE;

  load(): PersistedVote {
    return this.vote;
  }

  save(vote: PersistedVote): void {
    this.vote = { generation: vote.generation, votedFor: vote.votedFor };
  }
}

/** The vote file exists but does not hold a vote: refuse to guess (guessing could vote twice). */
export class VoteStoreCorruptError extends DoyenError {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(
      `vote store ${path} is corrupt (${reason}); fix or remove it only if this node cannot have voted`,
      'vote-store-corrupt',
    );
  }
}

/**
 * The vote as a JSON file (`{"generation":3,"votedFor":"10.0.0.1:2552"}`), replaced atomically:
 * written to a temp file, fsynced, renamed over the old one, directory fsynced. A missing file is
 * generation 0 without a vote.
 */
export class FileVoteStore implements VoteStore {
  constructor(readonly path: string) {}

  load(): PersistedVote {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return NONE;
      throw error;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new VoteStoreCorruptError(this.path, 'not JSON');
    }
    const v = parsed as { generation?: unknown; votedFor?: unknown } | null;
    if (
      typeof v !== 'object' ||
      v === null ||
      !Number.isSafeInteger(v.generation) ||
      (v.generation as number) < 0
    ) {
      throw new VoteStoreCorruptError(this.path, 'generation is not a non-negative integer');
    }
    if (v.votedFor !== null && typeof v.votedFor !== 'string') {
      throw new VoteStoreCorruptError(this.path, 'votedFor is neither an address nor null');
    }
    return { generation: v.generation as number, votedFor: v.votedFor ?? undefined };
  }

  save(vote: PersistedVote): void {
    const temp = join(dirname(this.path), `.${basename(this.path)}.tmp`);
    const body = JSON.stringify({ generation: vote.generation, votedFor: vote.votedFor ?? null });
    const fd = openSync(temp, 'w');
    try {
      writeFileSync(fd, body);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, this.path);
    // the rename itself must survive a power cut too
    const dir = openSync(dirname(this.path), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
}
