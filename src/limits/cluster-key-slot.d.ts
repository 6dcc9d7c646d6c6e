/** cluster-key-slot (ioredis's own) ships no types. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0 to 16383) of `key`, by its hash tag when it has one. */
  export default function calculateSlot(key: string | Buffer): number;
}
