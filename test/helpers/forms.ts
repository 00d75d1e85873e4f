// Counts how often each form (branch) of a property's generated input ran, so that a property can assert that
// every form it is named for was really exercised, not just generated in theory.
import assert from 'node:assert/strict';

export class FormCounter {
  private readonly seen = new Map<string, number>();

  hit(form: string): void {
    this.seen.set(form, (this.seen.get(form) ?? 0) + 1);
  }

  count(form: string): number {
    return this.seen.get(form) ?? 0;
  }

  /** Every named form ran at least `min` times. */
  assertEach(forms: readonly string[], min: number): void {
    assert.ok(forms.length > 0, 'no forms named');
    for (const f of forms) assert.ok(this.count(f) >= min, `form "${f}" ran ${this.count(f)} times, fewer than ${min} (seen: ${JSON.stringify(Object.fromEntries(this.seen))})`);
  }
}
