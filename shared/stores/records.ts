// Stored records are checked when read: a record that breaks its shape is a fault of ours, reported
// as an internal error (logged with detail) rather than passed on half-formed.
import { CorruptRecordError } from "#shared/errors.ts";

type Item = Record<string, unknown>;

export class RecordReader {
  readonly #what: string;
  readonly #item: Item;

  constructor(what: string, item: Item) {
    this.#what = what;
    this.#item = item;
  }

  string(key: string): string {
    const v = this.#item[key];
    if (typeof v !== "string") throw new CorruptRecordError(this.#what, `${key} is not a string`);
    return v;
  }

  optionalString(key: string): string | undefined {
    const v = this.#item[key];
    if (v === undefined) return undefined;
    if (typeof v !== "string") throw new CorruptRecordError(this.#what, `${key} is not a string`);
    return v;
  }

  number(key: string): number {
    const v = this.#item[key];
    if (typeof v !== "number" || !Number.isFinite(v))
      throw new CorruptRecordError(this.#what, `${key} is not a number`);
    return v;
  }

  optionalNumber(key: string): number | undefined {
    return this.#item[key] === undefined ? undefined : this.number(key);
  }

  boolean(key: string): boolean {
    const v = this.#item[key];
    if (typeof v !== "boolean") throw new CorruptRecordError(this.#what, `${key} is not a boolean`);
    return v;
  }

  strings(key: string): string[] {
    const v = this.#item[key];
    if (v === undefined) return [];
    const list = v instanceof Set ? [...v] : v;
    if (!Array.isArray(list) || !list.every((s) => typeof s === "string")) {
      throw new CorruptRecordError(this.#what, `${key} is not a list of strings`);
    }
    return list;
  }

  object(key: string): Record<string, unknown> | undefined {
    const v = this.#item[key];
    if (v === undefined) return undefined;
    if (!v || typeof v !== "object" || Array.isArray(v))
      throw new CorruptRecordError(this.#what, `${key} is not a map`);
    return v as Record<string, unknown>;
  }

  oneOf<T extends string>(key: string, allowed: readonly T[]): T {
    const v = this.string(key);
    if (!(allowed as readonly string[]).includes(v)) throw new CorruptRecordError(this.#what, `${key} is ${v}`);
    return v as T;
  }
}
