//! Reading an MLP from a safetensors file, checking every declared size before it is used.
//!
//! Accepted keys: `<prefix><index>.weight` (`[out, in]`) and optionally `<prefix><index>.bias`
//! (`[out]`) for each linear layer, with one prefix shared by all layers (`""`, `"layers."`,
//! `"net."`, `"actor.0."`…) and indices from 0 with a step of 1 (`nn.ModuleList`) or 2
//! (`nn.Sequential` with an activation module between Linear layers); plus optional `obs_mean`
//! and `obs_std` (`[obs_dim]`). Metadata key `activation`: `tanh`, `relu` or `identity`,
//! required when there is more than one layer; other metadata keys are ignored.

use std::collections::BTreeMap;

use safetensors::{Dtype, SafeTensors, tensor::TensorView};

use crate::limits::{MAX_FILE_BYTES, MAX_HEADER_BYTES, MAX_LAYERS, MAX_PARAMETERS, MAX_WIDTH};
use crate::mlp::{Activation, Layer, Mlp, Normalizer, OBS_STD_EPS};
use crate::{ActionMap, ObsEncoder, PolicyError};

/// Metadata key naming the activation between layers.
pub const ACTIVATION_KEY: &str = "activation";
/// Tensor holding the observation mean to subtract.
pub const OBS_MEAN: &str = "obs_mean";
/// Tensor holding the observation standard deviation to divide by.
pub const OBS_STD: &str = "obs_std";

const WEIGHT: &str = ".weight";
const BIAS: &str = ".bias";

/// A named tensor of the file.
type Named<'a> = (String, TensorView<'a>);
/// The weight and bias found for one layer index.
type LayerTensors<'a> = (Option<Named<'a>>, Option<Named<'a>>);

pub(crate) fn read(
    bytes: &[u8],
    encoder: &ObsEncoder,
    actions: &ActionMap,
) -> Result<Mlp, PolicyError> {
    let metadata = check_header(bytes)?;
    let file =
        SafeTensors::deserialize(bytes).map_err(|e| PolicyError::BadHeader(e.to_string()))?;

    let mut prefix: Option<String> = None;
    let mut layers: BTreeMap<usize, LayerTensors<'_>> = BTreeMap::new();
    let (mut mean, mut std) = (None, None);
    // Sorted, so errors do not depend on the header's order.
    let mut names: Vec<(&str, TensorView<'_>)> = file.iter().collect();
    names.sort_by(|a, b| a.0.cmp(b.0));
    for (name, view) in names {
        match name {
            OBS_MEAN => mean = Some(view),
            OBS_STD => std = Some(view),
            _ => {
                let (key_prefix, index, is_weight) = layer_key(name)?;
                match &prefix {
                    None => prefix = Some(key_prefix.to_string()),
                    Some(p) if p != key_prefix => {
                        return Err(PolicyError::AmbiguousPrefix {
                            first: p.clone(),
                            second: key_prefix.to_string(),
                        });
                    }
                    Some(_) => {}
                }
                let slot = layers.entry(index).or_default();
                let entry = Some((name.to_string(), view));
                if is_weight {
                    slot.0 = entry;
                } else {
                    slot.1 = entry;
                }
            }
        }
    }
    let prefix = prefix.ok_or(PolicyError::NoLayers)?;
    if layers.len() > MAX_LAYERS {
        return Err(PolicyError::TooLarge {
            what: "the number of layers",
            got: layers.len(),
            max: MAX_LAYERS,
        });
    }
    check_numbering(&prefix, layers.keys().copied())?;

    // Shapes first: all sizes are known and capped before any value is converted.
    let mut planned = Vec::with_capacity(layers.len());
    let mut parameters = 0usize;
    let mut previous: Option<(String, usize)> = None;
    for (index, (weight, bias)) in layers {
        let Some((weight_name, weight)) = weight else {
            return Err(PolicyError::MissingTensor {
                name: format!("{prefix}{index}{WEIGHT}"),
                why: format!("the file has {prefix}{index}{BIAS} but no weight for it"),
            });
        };
        let (outputs, inputs) = match weight.shape() {
            [o, i] => (*o, *i),
            got => {
                return Err(PolicyError::BadTensorShape {
                    tensor: weight_name,
                    expected: "2 dimensions [out, in]".into(),
                    got: got.to_vec(),
                });
            }
        };
        for size in [outputs, inputs] {
            if size > MAX_WIDTH {
                return Err(PolicyError::TooLarge {
                    what: "a layer's width",
                    got: size,
                    max: MAX_WIDTH,
                });
            }
        }
        if let Some((bias_name, bias)) = &bias
            && bias.shape() != [outputs]
        {
            return Err(PolicyError::BadTensorShape {
                tensor: bias_name.clone(),
                expected: format!("[{outputs}], the output size of {weight_name}"),
                got: bias.shape().to_vec(),
            });
        }
        match &previous {
            None if inputs != encoder.dim() => {
                return Err(PolicyError::ObsMismatch {
                    tensor: weight_name,
                    space: encoder.space().to_string(),
                    expected: encoder.dim(),
                    got: inputs,
                });
            }
            Some((_, before)) if inputs != *before => {
                return Err(PolicyError::LayerChain {
                    tensor: weight_name,
                    expected: *before,
                    got: inputs,
                });
            }
            _ => {}
        }
        parameters = parameters.saturating_add(outputs * inputs + outputs);
        if parameters > MAX_PARAMETERS {
            return Err(PolicyError::TooLarge {
                what: "the number of parameters",
                got: parameters,
                max: MAX_PARAMETERS,
            });
        }
        previous = Some((weight_name.clone(), outputs));
        planned.push((weight_name, weight, bias, inputs, outputs));
    }
    if let Some((last, outputs)) = &previous
        && *outputs != actions.output_dim()
    {
        return Err(PolicyError::ActMismatch {
            tensor: last.clone(),
            space: actions.space().to_string(),
            expected: actions.output_dim(),
            got: *outputs,
            how: actions.describe(),
        });
    }
    let normalizer = read_normalizer(mean, std, encoder.dim())?;
    let activation = match metadata.get(ACTIVATION_KEY) {
        Some(name) => Activation::from_name(name)?,
        None if planned.len() > 1 => {
            return Err(PolicyError::MissingActivation {
                layers: planned.len(),
            });
        }
        // A linear controller has no activation to name.
        None => Activation::Identity,
    };

    let layers = planned
        .into_iter()
        .map(|(weight_name, weight, bias, inputs, outputs)| {
            let weight = to_f32(&weight_name, &weight)?;
            let bias = match bias {
                Some((name, view)) => to_f32(&name, &view)?,
                None => vec![0.0; outputs],
            };
            Ok(Layer {
                inputs,
                outputs,
                weight,
                bias,
            })
        })
        .collect::<Result<Vec<_>, PolicyError>>()?;
    Ok(Mlp {
        layers,
        activation,
        normalizer,
    })
}

/// Checks the 8-byte length, the JSON header and every tensor's byte range against the file's
/// real length, so that nothing later trusts a declared size; returns the string metadata.
fn check_header(bytes: &[u8]) -> Result<BTreeMap<String, String>, PolicyError> {
    let len = bytes.len() as u64;
    if len > MAX_FILE_BYTES {
        return Err(PolicyError::OverCap {
            what: "the file".into(),
            declared: len,
            max: MAX_FILE_BYTES,
        });
    }
    let Some((head, rest)) = bytes.split_first_chunk::<8>() else {
        return Err(PolicyError::Truncated {
            what: "the 8-byte header length".into(),
            expected: 8,
            got: len,
        });
    };
    let header_len = u64::from_le_bytes(*head);
    if header_len > MAX_HEADER_BYTES {
        return Err(PolicyError::OverCap {
            what: "the declared JSON header".into(),
            declared: header_len,
            max: MAX_HEADER_BYTES,
        });
    }
    if header_len > rest.len() as u64 {
        return Err(PolicyError::Truncated {
            what: "the JSON header".into(),
            expected: 8 + header_len,
            got: len,
        });
    }
    let (header, data) = rest.split_at(header_len as usize);
    let header = std::str::from_utf8(header)
        .map_err(|e| PolicyError::BadHeader(format!("the header is not UTF-8 ({e})")))?;
    let header: serde_json::Map<String, serde_json::Value> = serde_json::from_str(header)
        .map_err(|e| PolicyError::BadHeader(format!("the header is not a JSON object ({e})")))?;
    let data_len = data.len() as u64;
    let mut metadata = BTreeMap::new();
    for (name, entry) in &header {
        if name == "__metadata__" {
            let map = entry.as_object().ok_or_else(|| {
                PolicyError::BadHeader("__metadata__ is not an object of strings".into())
            })?;
            for (key, value) in map {
                let value = value.as_str().ok_or_else(|| {
                    PolicyError::BadHeader(format!("__metadata__ value of {key:?} is not a string"))
                })?;
                metadata.insert(key.clone(), value.to_string());
            }
            continue;
        }
        let offsets = entry
            .get("data_offsets")
            .and_then(|o| o.as_array())
            .and_then(|o| match o.as_slice() {
                [s, e] => Some((s.as_u64()?, e.as_u64()?)),
                _ => None,
            })
            .ok_or_else(|| {
                PolicyError::BadHeader(format!(
                    "tensor {name:?} has no data_offsets [start, end] of integers"
                ))
            })?;
        let (start, end) = offsets;
        if end > MAX_FILE_BYTES {
            return Err(PolicyError::OverCap {
                what: format!("tensor {name:?}'s data"),
                declared: end,
                max: MAX_FILE_BYTES,
            });
        }
        if start > end {
            return Err(PolicyError::BadHeader(format!(
                "tensor {name:?} has data_offsets [{start}, {end}], start after end"
            )));
        }
        if end > data_len {
            return Err(PolicyError::Truncated {
                what: format!("tensor {name:?}"),
                expected: 8 + header_len + end,
                got: len,
            });
        }
    }
    Ok(metadata)
}

/// Splits `<prefix><index>.weight` / `.bias` into its prefix, index and which it is.
fn layer_key(name: &str) -> Result<(&str, usize, bool), PolicyError> {
    let unknown = || PolicyError::UnknownTensor {
        name: name.to_string(),
    };
    let (stem, is_weight) = if let Some(stem) = name.strip_suffix(WEIGHT) {
        (stem, true)
    } else if let Some(stem) = name.strip_suffix(BIAS) {
        (stem, false)
    } else {
        return Err(unknown());
    };
    let (prefix, index) = match stem.rfind('.') {
        Some(dot) => stem.split_at(dot + 1),
        None => ("", stem),
    };
    let canonical = !index.is_empty()
        && index.len() <= 6
        && index.bytes().all(|b| b.is_ascii_digit())
        && (index == "0" || !index.starts_with('0'));
    if !canonical {
        return Err(unknown());
    }
    let index = index.parse().map_err(|_| unknown())?;
    Ok((prefix, index, is_weight))
}

/// Layers are numbered 0, s, 2s, … with a step s of 1 or 2; anything else lacks a layer.
fn check_numbering(
    prefix: &str,
    mut indices: impl Iterator<Item = usize>,
) -> Result<(), PolicyError> {
    let missing = |index: usize| PolicyError::MissingLayer {
        key: format!("{prefix}{index}{WEIGHT}"),
    };
    match indices.next() {
        None | Some(0) => {}
        Some(_) => return Err(missing(0)),
    }
    // The first gap decides the step: an odd gap lacks index 1, an even one index 2.
    let step = match indices.next() {
        None => return Ok(()),
        Some(step @ (1 | 2)) => step,
        Some(other) => return Err(missing(if other % 2 == 0 { 2 } else { 1 })),
    };
    let mut expected = 2 * step;
    for index in indices {
        if index != expected {
            return Err(missing(expected));
        }
        expected += step;
    }
    Ok(())
}

fn read_normalizer(
    mean: Option<TensorView<'_>>,
    std: Option<TensorView<'_>>,
    dim: usize,
) -> Result<Option<Normalizer>, PolicyError> {
    let (mean, std) = match (mean, std) {
        (None, None) => return Ok(None),
        (Some(m), Some(s)) => (m, s),
        (Some(_), None) => {
            return Err(PolicyError::MissingTensor {
                name: OBS_STD.into(),
                why: format!("{OBS_MEAN} is given; normalisation needs both"),
            });
        }
        (None, Some(_)) => {
            return Err(PolicyError::MissingTensor {
                name: OBS_MEAN.into(),
                why: format!("{OBS_STD} is given; normalisation needs both"),
            });
        }
    };
    for (name, view) in [(OBS_MEAN, &mean), (OBS_STD, &std)] {
        if view.shape() != [dim] {
            return Err(PolicyError::BadTensorShape {
                tensor: name.into(),
                expected: format!("[{dim}], the flattened observation size"),
                got: view.shape().to_vec(),
            });
        }
    }
    let mean = to_f32(OBS_MEAN, &mean)?;
    let std = to_f32(OBS_STD, &std)?;
    if let Some((index, value)) = std.iter().enumerate().find(|(_, v)| **v < 0.0) {
        return Err(PolicyError::BadValue {
            tensor: OBS_STD.into(),
            index,
            value: *value,
            why: "a standard deviation cannot be negative",
        });
    }
    let inv_std = std.iter().map(|s| 1.0 / s.max(OBS_STD_EPS)).collect();
    Ok(Some(Normalizer { mean, inv_std }))
}

/// The tensor's values as float32 (F32 as is; F64, F16, BF16 converted), all finite.
fn to_f32(name: &str, view: &TensorView<'_>) -> Result<Vec<f32>, PolicyError> {
    let data = view.data();
    let values: Vec<f32> = match view.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F64 => data
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32)
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        other => {
            return Err(PolicyError::UnsupportedDtype {
                tensor: name.to_string(),
                dtype: format!("{other:?}"),
            });
        }
    };
    if let Some((index, value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(PolicyError::NonFinite {
            tensor: name.to_string(),
            index,
            value: *value,
        });
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_keys_split_into_prefix_and_index() {
        assert_eq!(layer_key("0.weight").unwrap(), ("", 0, true));
        assert_eq!(layer_key("layers.12.bias").unwrap(), ("layers.", 12, false));
        assert_eq!(
            layer_key("actor.net.2.weight").unwrap(),
            ("actor.net.", 2, true)
        );
        for bad in [
            "weight",
            "x.weight",
            "01.weight",
            ".weight",
            "0.weights",
            "1234567.bias",
        ] {
            assert!(layer_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn numbering_steps_by_one_or_two() {
        let check = |ix: &[usize]| check_numbering("", ix.iter().copied());
        assert!(check(&[0]).is_ok());
        assert!(check(&[0, 1, 2, 3]).is_ok());
        assert!(check(&[0, 2, 4]).is_ok());
        let missing = |ix: &[usize]| match check(ix) {
            Err(PolicyError::MissingLayer { key }) => key,
            other => panic!("{ix:?}: {other:?}"),
        };
        assert_eq!(missing(&[1, 2]), "0.weight");
        assert_eq!(missing(&[0, 4]), "2.weight");
        assert_eq!(missing(&[0, 3]), "1.weight");
        assert_eq!(missing(&[0, 2, 6]), "4.weight");
        assert_eq!(missing(&[0, 1, 3]), "2.weight");
    }
}
