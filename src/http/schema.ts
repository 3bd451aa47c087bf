/**
 * Standard Schema v1 (https://standardschema.dev), inlined as the spec recommends, so
 * any validator that implements it (zod, valibot, arktype…) types `res.data`.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

export interface StandardIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<StandardIssue> };

/** The output type of a Standard Schema. */
export type InferOutput<S extends StandardSchemaV1> = NonNullable<S['~standard']['types']>['output'];

/** Validates `value`; returns the typed value or the issues. */
export async function validate<S extends StandardSchemaV1>(
  schema: S,
  value: unknown,
): Promise<{ value: InferOutput<S> } | { issues: ReadonlyArray<StandardIssue> }> {
  const result = await schema['~standard'].validate(value);
  return result.issues ? { issues: result.issues } : { value: result.value as InferOutput<S> };
}
