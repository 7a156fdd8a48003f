"""BERT-style encoders and GPT-style decoders written with primitive TF ops.

Weights are tf.Variables (as in a real model: they reach a cluster through
ReadVariableOp, never as constants), and every shape that depends on batch or
sequence is read with tf.shape, so one tf.function serves all sizes."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List

import numpy as np
import tensorflow as tf


@dataclass(frozen=True)
class Config:
    """Model size; `causal` makes it a decoder (GPT), else an encoder (BERT)."""
    hidden: int = 768
    heads: int = 12
    ffn: int = 3072
    layers: int = 4
    vocab: int = 30522
    max_positions: int = 512
    causal: bool = False

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


Weights = Dict[str, tf.Variable]


def make_weights(config: Config, seed: int = 0) -> Weights:
    """Random weights with BERT's initializer scale (normal, stddev 0.02)."""
    rng = np.random.default_rng(seed)
    h, f = config.hidden, config.ffn

    def var(name: str, shape, scale: float = 0.02, base: float = 0.0) -> tf.Variable:
        value = base + scale * rng.standard_normal(shape)
        return tf.Variable(value.astype(np.float32), name=name)

    weights = {"tok_emb": var("tok_emb", (config.vocab, h)),
               "pos_emb": var("pos_emb", (config.max_positions, h)),
               "emb_ln_g": var("emb_ln_g", (h,), 0.1, 1.0), "emb_ln_b": var("emb_ln_b", (h,))}
    for i in range(config.layers):
        for name, shape in (("wq", (h, h)), ("wk", (h, h)), ("wv", (h, h)), ("wo", (h, h)),
                            ("w1", (h, f)), ("w2", (f, h))):
            weights[f"{i}/{name}"] = var(f"{i}_{name}", shape)
            weights[f"{i}/b{name[1:]}"] = var(f"{i}_b{name[1:]}", (shape[1],))
        for ln in ("ln1", "ln2"):
            weights[f"{i}/{ln}_g"] = var(f"{i}_{ln}_g", (h,), 0.1, 1.0)
            weights[f"{i}/{ln}_b"] = var(f"{i}_{ln}_b", (h,))
    return weights


def layer_norm(x: tf.Tensor, gamma, beta, eps: float = 1e-12) -> tf.Tensor:
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    var = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=-1, keepdims=True)
    return (x - mean) * tf.math.rsqrt(var + eps) * gamma + beta


def gelu(x: tf.Tensor) -> tf.Tensor:
    return 0.5 * x * (1.0 + tf.math.erf(x * (1.0 / math.sqrt(2.0))))


def dense(x2d: tf.Tensor, w, b) -> tf.Tensor:
    return tf.matmul(x2d, w) + b


def split_heads(t2d: tf.Tensor, batch, seq, config: Config) -> tf.Tensor:
    """[B*S, H] -> [B, heads, S, head_dim]."""
    return tf.transpose(tf.reshape(t2d, [batch, seq, config.heads, config.head_dim]), [0, 2, 1, 3])


def merge_heads(t: tf.Tensor, batch, seq, config: Config) -> tf.Tensor:
    """[B, heads, S, head_dim] -> [B*S, H]."""
    return tf.reshape(tf.transpose(t, [0, 2, 1, 3]), [batch * seq, config.hidden])


def attention_bias(mask: tf.Tensor, config: Config) -> tf.Tensor:
    """Additive bias [B, 1, S|1, S]: -10000 on padding, and on future tokens
    when the model is causal."""
    pad = (1.0 - tf.cast(mask, tf.float32))[:, tf.newaxis, tf.newaxis, :] * -10000.0
    if not config.causal:
        return pad
    pos = tf.range(tf.shape(mask)[1])
    future = tf.cast(pos[tf.newaxis, :] > pos[:, tf.newaxis], tf.float32) * -10000.0
    return pad + future[tf.newaxis, tf.newaxis]


def attention(x2d, w: Weights, i: int, bias, batch, seq, config: Config) -> tf.Tensor:
    """Multi-head self-attention; q is scaled before the scores matmul, as
    Keras' MultiHeadAttention does."""
    q = dense(x2d, w[f"{i}/wq"], w[f"{i}/bq"]) * (1.0 / math.sqrt(config.head_dim))
    q = split_heads(q, batch, seq, config)
    k = split_heads(dense(x2d, w[f"{i}/wk"], w[f"{i}/bk"]), batch, seq, config)
    v = split_heads(dense(x2d, w[f"{i}/wv"], w[f"{i}/bv"]), batch, seq, config)
    scores = tf.matmul(q, k, transpose_b=True) + bias
    ctx = merge_heads(tf.matmul(tf.nn.softmax(scores), v), batch, seq, config)
    return dense(ctx, w[f"{i}/wo"], w[f"{i}/bo"])


def embed(ids: tf.Tensor, w: Weights) -> tf.Tensor:
    """Token plus position embeddings [B, S, H]; the tables are read whole
    (ReadVariableOp) and gathered inside the graph."""
    positions = tf.range(tf.shape(ids)[1])
    tokens = tf.gather(tf.convert_to_tensor(w["tok_emb"]), ids)
    return tokens + tf.gather(tf.convert_to_tensor(w["pos_emb"]), positions)[tf.newaxis]


def transformer(ids: tf.Tensor, mask: tf.Tensor, w: Weights, config: Config) -> tf.Tensor:
    """Hidden states [B, S, H]: post-LN (BERT) for encoders, pre-LN (GPT-2)
    for decoders."""
    batch, seq = tf.shape(ids)[0], tf.shape(ids)[1]
    x = tf.reshape(embed(ids, w), [batch * seq, config.hidden])
    if not config.causal:
        x = layer_norm(x, w["emb_ln_g"], w["emb_ln_b"])
    bias = attention_bias(mask, config)
    for i in range(config.layers):
        if config.causal:
            x = x + attention(layer_norm(x, w[f"{i}/ln1_g"], w[f"{i}/ln1_b"]), w, i, bias,
                              batch, seq, config)
            h = layer_norm(x, w[f"{i}/ln2_g"], w[f"{i}/ln2_b"])
            x = x + dense(gelu(dense(h, w[f"{i}/w1"], w[f"{i}/b1"])), w[f"{i}/w2"], w[f"{i}/b2"])
        else:
            x = layer_norm(x + attention(x, w, i, bias, batch, seq, config),
                           w[f"{i}/ln1_g"], w[f"{i}/ln1_b"])
            h = dense(gelu(dense(x, w[f"{i}/w1"], w[f"{i}/b1"])), w[f"{i}/w2"], w[f"{i}/b2"])
            x = layer_norm(x + h, w[f"{i}/ln2_g"], w[f"{i}/ln2_b"])
    if config.causal:
        x = layer_norm(x, w["emb_ln_g"], w["emb_ln_b"])
    return tf.reshape(x, [batch, seq, config.hidden])


def next_token_logits(ids: tf.Tensor, w: Weights, config: Config) -> tf.Tensor:
    """GPT head: logits [B, vocab] of the last position, tied to the token
    embedding."""
    hidden = transformer(ids, tf.ones_like(ids), w, config)
    return tf.matmul(hidden[:, -1], tf.convert_to_tensor(w["tok_emb"]), transpose_b=True)


def gemm_floor(x: tf.Tensor, w: Weights, config: Config) -> tf.Tensor:
    """The encoder's GEMMs alone on hidden states x [B, S, H] (projections,
    FFN, attention scores and context, with the head transposes) and nothing
    else: the compute floor a fused model cannot beat.  Through our compiler
    Q, K and V (one x2d) run as one merged call (passes/merge_gemm.py), as
    they do in the model."""
    batch, seq = tf.shape(x)[0], tf.shape(x)[1]
    x2d = tf.reshape(x, [batch * seq, config.hidden])
    for i in range(config.layers):
        q, k, v = (split_heads(tf.matmul(x2d, w[f"{i}/{n}"]), batch, seq, config)
                   for n in ("wq", "wk", "wv"))
        ctx = merge_heads(tf.matmul(tf.matmul(q, k, transpose_b=True), v), batch, seq, config)
        x2d = tf.matmul(tf.matmul(tf.matmul(ctx, w[f"{i}/wo"]), w[f"{i}/w1"]), w[f"{i}/w2"])
    return x2d


def signature_ids() -> List[tf.TensorSpec]:
    """[ids, mask], both int32 [batch, seq] of unknown size."""
    return [tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None], tf.int32)]
