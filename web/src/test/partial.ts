// A fixture names only the fields a test is about; the others are absent,
// as in a document of an older daemon. partial says so to the compiler
// without changing the value.
export type DeepPartial<T> = T extends readonly (infer U)[]
  ? DeepPartial<U>[]
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

export function partial<T>(x: DeepPartial<NoInfer<T>>): T {
  return x as T;
}
