//! What model calls cost: cents per million input and output tokens, by model (`PRICES`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Cents per million input and output tokens, by model; `*` is the price of any other model.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Prices(pub BTreeMap<String, [i64; 2]>);

impl Default for Prices {
    fn default() -> Self {
        Self(BTreeMap::from([("*".to_owned(), [100, 400])]))
    }
}

impl Prices {
    /// Reads `{"model": [input, output], "*": [input, output]}`.
    pub fn parse(json: &str) -> Result<Self, String> {
        let mut p: BTreeMap<String, [i64; 2]> = serde_json::from_str(json).map_err(|e| format!("PRICES: {e}"))?;
        p.entry("*".into()).or_insert([100, 400]);
        Ok(Self(p))
    }

    /// What a call costs, rounded up to a whole cent.
    pub fn cents(&self, model: &str, input_tokens: i64, output_tokens: i64) -> i64 {
        let [pi, po] = self.0.get(model).or_else(|| self.0.get("*")).copied().unwrap_or([100, 400]);
        let micro = input_tokens.max(0) * pi + output_tokens.max(0) * po;
        (micro + 999_999) / 1_000_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_round_up_and_fall_back_to_the_default() {
        let p = Prices::parse(r#"{"big": [1000, 3000]}"#).unwrap();
        assert_eq!(p.cents("big", 1_000_000, 0), 1000);
        assert_eq!(p.cents("big", 1, 0), 1, "any use costs at least a cent");
        assert_eq!(p.cents("other", 2_000_000, 500_000), 400);
        assert_eq!(p.cents("other", 0, 0), 0);
        assert!(Prices::parse("[1,2]").is_err());
    }
}
