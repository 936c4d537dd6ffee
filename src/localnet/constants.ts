/**
 * Protocol numbers of the local cluster, each the value current Agave uses, so the cluster ages,
 * confirms and limits exactly as mainnet does. One place, named, never scattered literals.
 */

/** A blockhash is usable for this many slots after its own (`MAX_PROCESSING_AGE`). */
export const MAX_PROCESSING_AGE = 150;

/** The status cache window: `getSignatureStatuses` without history looks this far back (`MAX_RECENT_BLOCKHASHES`). */
export const STATUS_CACHE_SLOTS = 300;

/** Consecutive slots each leader holds (`NUM_CONSECUTIVE_LEADER_SLOTS`). */
export const LEADER_SLOTS = 4;

/** Slots between a block's confirmation and its root: `finalized` = 32 slots after `confirmed`. */
export const FINALITY_DEPTH = 32;

/** Base fee per signature (`DEFAULT_TARGET_LAMPORTS_PER_SIGNATURE / 2` as genesis sets it). */
export const LAMPORTS_PER_SIGNATURE = 5000;

/** Largest transaction on the wire (`PACKET_DATA_SIZE`). */
export const PACKET_DATA_SIZE = 1232;

/** `getSignatureStatuses` accepts at most this many signatures (`MAX_GET_SIGNATURE_STATUSES_QUERY_ITEMS`). */
export const MAX_SIGNATURE_STATUSES = 256;

/** `getMultipleAccounts` accepts at most this many addresses (`MAX_MULTIPLE_ACCOUNTS`). */
export const MAX_MULTIPLE_ACCOUNTS = 100;

/** `getSlotLeaders` returns at most this many (`MAX_GET_SLOT_LEADERS`). */
export const MAX_SLOT_LEADERS = 5000;

/** Largest JSON-RPC request body (`MAX_REQUEST_BODY_SIZE`, 50 KiB). */
export const MAX_REQUEST_BODY = 50 * 1024;

/** `rentEpoch` of every rent-exempt account (`RENT_EXEMPT_RENT_EPOCH`, u64::MAX). */
export const RENT_EXEMPT_RENT_EPOCH = 18446744073709551615n;

/**
 * Version the cluster reports (`getVersion`, `getClusterNodes`, `context.apiVersion`): the Agave
 * line whose runtime crates LiteSVM 1.5 executes transactions with.
 */
export const SOLANA_CORE_VERSION = '4.2.0';

/** First 4 bytes of the feature-set identifier the cluster reports (a fixed, arbitrary value). */
export const FEATURE_SET = 3_640_012_085;

/** Shred version the nodes report (a fixed, arbitrary value, as one cluster has one). */
export const SHRED_VERSION = 50_093;
