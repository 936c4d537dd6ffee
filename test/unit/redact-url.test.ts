/** A chain node's URL as shown (issue 33 item 9): the provider's key out, the node still named. */
import { describe, expect, it } from 'vitest';
import { redactUrlSecrets } from '../../src/chain/redact-url.js';

describe('redactUrlSecrets', () => {
  it.each([
    ['https://mainnet.helius-rpc.com/?api-key=0b7e2c1d-aaaa-bbbb', 'https://mainnet.helius-rpc.com?api-key=***'],
    ['https://solana-mainnet.g.alchemy.com/v2/AbCdEf0123456789xyz', 'https://solana-mainnet.g.alchemy.com/v2/***'],
    ['https://example.solana-mainnet.quiknode.pro/4f1c9a7e2b3d5f60/', 'https://example.solana-mainnet.quiknode.pro/***/'],
    ['https://user:s3cret@rpc.example.com:8899/rpc', 'https://***@rpc.example.com:8899/rpc'],
    ['http://127.0.0.1:8899', 'http://127.0.0.1:8899'],
    ['wss://node.example.com/ws?token=abc&x=1#frag', 'wss://node.example.com/ws?token=***&x=***#***'],
    ['not a url with s3cret', '***'],
  ])('%s → %s', (url, shown) => {
    expect(redactUrlSecrets(url)).toBe(shown);
  });
});
