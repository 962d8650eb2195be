//! The JSON Schemas (2020-12) a type publishes: one for what a caller may send, one for what the server
//! sends. Every face derives its tool and route schemas here, so the two contracts are serde's own.

/// The schema of what a caller may send: serde's deserialize contract (JSON Schema 2020-12).
pub fn input_schema<T: schemars::JsonSchema>() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft2020_12().for_deserialize().into_generator().into_root_schema_for::<T>()
}

/// The schema of what the server sends: serde's serialize contract, so a field serde may skip is not
/// `required` and a field it never writes is not listed. Clients validate every result against it.
pub fn output_schema<T: schemars::JsonSchema>() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft2020_12().for_serialize().into_generator().into_root_schema_for::<T>()
}
