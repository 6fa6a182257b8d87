// What a conversation store backend is: a flat namespace of immutable objects, each
// written once and read by key. That is all the segment layer (activities/conversation-
// store.ts) needs — hashing, sealing, caching and walking chains live there, once — and
// it is the shape of an S3 bucket (GetObject, PutObject with If-None-Match: *, HeadObject)
// and of Temporal's external-storage drivers (`@temporalio/common` ExternalStorage, SDK
// ≥ 1.21: store a payload, get it back by claim), so either could back it later without
// the layers above changing.

/** Which backend: the worker's configuration chooses (activities/store/open.ts). */
export type StoreKind = 'local' | 'postgres';

export interface ObjectStore {
  readonly kind: StoreKind;
  /** Where it is, for messages and logs: a directory, or `postgres://user@host:port/db` (never a password). */
  readonly where: string;
  /** The object's bytes, or null when there is no such object. Throws when the store cannot be read. */
  get(key: string): Promise<Buffer | null>;
  /** Writes the object unless one exists under the key (then it is left as it is: first write wins). */
  putIfAbsent(key: string, body: Buffer): Promise<void>;
  /** Whether an object exists under the key. */
  has(key: string): Promise<boolean>;
  /** Releases connections (the local backend holds none). */
  close(): Promise<void>;
}

/** The keys Keel writes: conversation segments by content hash, and the store's identity marker. */
export const segmentKey = (hash: string): string => `segments/${hash}`;
export const IDENTITY_KEY = 'keel-store-id';
/** Workspace checkpoints (activities/workspace-checkpoint.ts): a manifest, and a file's content, by SHA-256. */
export const checkpointKey = (hash: string): string => `checkpoints/${hash}`;
export const blobKey = (hash: string): string => `blobs/${hash}`;
/** Many small files' contents end to end (machines/checkpoint-manifest.ts, format 2), by the SHA-256 of its plain bytes. */
export const packKey = (hash: string): string => `packs/${hash}`;
