//! Identifiers that cross the wire. Each is its own type so a session id cannot be passed
//! where an env handle is expected; the wire carries them as strings.

use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The prefix that makes an id's kind readable in logs and files.
            pub const PREFIX: &'static str = $prefix;

            /// An id built from 16 random bytes (128 bits), hex-encoded after the prefix.
            pub fn from_random(bytes: [u8; 16]) -> Self {
                $name(format!("{}{}", $prefix, hex::encode(bytes)))
            }

            /// Wraps an id that arrived from a peer or a file; unknown ids are simply not found.
            pub fn from_wire(s: impl Into<String>) -> Self {
                $name(s.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The first 8 characters after the prefix, as lists and legends show an id.
            pub fn short(&self) -> &str {
                let random = self.0.strip_prefix($prefix).unwrap_or(&self.0);
                random
                    .char_indices()
                    .nth(8)
                    .map_or(random, |(end, _)| &random[..end])
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// An environment instance on the evaluator.
    EnvHandle,
    "env-"
);
id_type!(
    /// An interactive evaluation session.
    SessionId,
    "ses-"
);
id_type!(
    /// One official run: the folder `<state>/runs/<run_id>/` and its trajectory.
    RunId,
    "run-"
);
id_type!(
    /// A batch evaluation.
    BatchId,
    "bat-"
);

#[cfg(test)]
mod tests {
    use super::RunId;

    #[test]
    fn short_ids_cut_after_the_prefix_on_character_boundaries() {
        assert_eq!(RunId::from_random([0xab; 16]).short(), "abababab");
        assert_eq!(RunId::from_wire("run-ab").short(), "ab");
        assert_eq!(RunId::from_wire("mine").short(), "mine");
        assert_eq!(RunId::from_wire("run-ééééééééé").short(), "éééééééé");
    }
}
