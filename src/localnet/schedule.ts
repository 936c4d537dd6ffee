/**
 * Epochs and the leader schedule of the local cluster: pure arithmetic, no clock.
 *
 * The epoch schedule has mainnet's shape without warm-up (`warmup: false`, the leader schedule
 * of epoch `e + 1` known from the first slot of epoch `e`), only shorter. Every validator leads
 * `LEADER_SLOTS` consecutive slots in turn, counted from the first slot of each epoch, which is
 * exactly how a real schedule is laid out (`getLeaderSchedule` gives slot indexes relative to the
 * epoch start); the rotation stands in for the stake-weighted shuffle.
 */
import { LEADER_SLOTS } from './constants.js';

/** The `getEpochSchedule` value. */
export interface EpochScheduleInfo {
  slotsPerEpoch: number;
  leaderScheduleSlotOffset: number;
  warmup: boolean;
  firstNormalEpoch: number;
  firstNormalSlot: number;
}

export class LeaderSchedule {
  /**
   * @param leaders validator identities (base58), in rotation order
   * @param slotsPerEpoch a multiple of `LEADER_SLOTS`, so no leader's turn straddles two epochs
   */
  constructor(
    readonly leaders: readonly string[],
    readonly slotsPerEpoch: number,
  ) {}

  epochOf(slot: number): number {
    return Math.floor(slot / this.slotsPerEpoch);
  }

  firstSlotOf(epoch: number): number {
    return epoch * this.slotsPerEpoch;
  }

  /** The last epoch whose schedule is known at `slot`: the next one (offset = one epoch). */
  knownEpochAt(slot: number): number {
    return this.epochOf(slot) + 1;
  }

  leaderIndexAt(slot: number): number {
    const inEpoch = slot - this.firstSlotOf(this.epochOf(slot));
    return Math.floor(inEpoch / LEADER_SLOTS) % this.leaders.length;
  }

  leaderAt(slot: number): string {
    return this.leaders[this.leaderIndexAt(slot)]!;
  }

  /** `getLeaderSchedule` for `epoch`: identity → slot indexes relative to the epoch's first slot. */
  scheduleOf(epoch: number): Record<string, number[]> {
    const out: Record<string, number[]> = {};
    const first = this.firstSlotOf(epoch);
    for (let i = 0; i < this.slotsPerEpoch; i++) {
      const leader = this.leaderAt(first + i);
      (out[leader] ??= []).push(i);
    }
    return out;
  }

  epochSchedule(): EpochScheduleInfo {
    return {
      slotsPerEpoch: this.slotsPerEpoch,
      leaderScheduleSlotOffset: this.slotsPerEpoch,
      warmup: false,
      firstNormalEpoch: 0,
      firstNormalSlot: 0,
    };
  }
}
