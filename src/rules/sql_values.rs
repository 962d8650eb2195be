//! How SQLite hands values back, for serde: booleans as 0/1, JSON kept in TEXT columns.

use serde::de::DeserializeOwned;

/// SQLite stores booleans as 0/1; this reads them back as `bool`.
pub fn int_bool<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    use serde::Deserialize;
    Ok(i64::deserialize(d)? != 0)
}

/// JSON kept in a TEXT column, read back as a value.
pub fn json_text<'de, D: serde::Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<T, D::Error> {
    use serde::Deserialize;
    let text = String::deserialize(d)?;
    serde_json::from_str(&text).map_err(serde::de::Error::custom)
}
