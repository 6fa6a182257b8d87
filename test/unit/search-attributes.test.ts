import { describe, expect, it } from 'vitest';
import { searchAttributeFlags } from '../../worker/search-attributes';

describe('search attributes', () => {
  it('registers the attributes the spec names, with the CLI type names start-dev accepts', () => {
    expect(searchAttributeFlags()).toEqual([
      '--search-attribute',
      'KeelKind=Keyword',
      '--search-attribute',
      'KeelStatus=Keyword',
      '--search-attribute',
      'KeelPendingApprovals=Int',
      '--search-attribute',
      'KeelWorkspace=Keyword',
      '--search-attribute',
      'KeelWaiting=Keyword',
    ]);
  });
});
