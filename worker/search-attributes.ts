import { keelSearchAttributes } from '../workflows/search-attributes';

const cliTypeName = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
} as const;

/** `--search-attribute Name=Type` flags for `temporal server start-dev`. */
export function searchAttributeFlags(): string[] {
  return keelSearchAttributes.flatMap((key) => ['--search-attribute', `${key.name}=${cliTypeName[key.type]}`]);
}
