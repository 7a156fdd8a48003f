"""The same transformers built from Keras 3 layers (Embedding,
MultiHeadAttention, LayerNormalization, Dense): what users write, with the
ops Keras chooses (Einsum projections, its own softmax masking)."""
from __future__ import annotations

import keras
import tensorflow as tf

from .transformer import Config


class KerasTransformer(keras.Model):
    """BERT-style (post-LN) encoder or, with `config.causal`, a GPT-style
    (pre-LN, causal mask) decoder returning hidden states [B, S, H]."""

    def __init__(self, config: Config, seed: int = 0) -> None:
        super().__init__()
        keras.utils.set_random_seed(seed)
        h = config.hidden
        self.config = config
        self.tok = keras.layers.Embedding(config.vocab, h)
        self.pos = keras.layers.Embedding(config.max_positions, h)
        self.ln_emb = keras.layers.LayerNormalization(epsilon=1e-12)
        self.blocks = [
            (keras.layers.MultiHeadAttention(config.heads, config.head_dim),
             keras.layers.LayerNormalization(epsilon=1e-12),
             keras.layers.Dense(config.ffn, activation="gelu"),
             keras.layers.Dense(h),
             keras.layers.LayerNormalization(epsilon=1e-12))
            for _ in range(config.layers)]
        self(tf.zeros((1, 1), tf.int32))  # creates the weights eagerly, outside any tf.function

    def call(self, ids: tf.Tensor, mask: tf.Tensor = None) -> tf.Tensor:
        """mask [B, S] (1 = token, 0 = padding) is used by the encoder only."""
        positions = keras.ops.arange(keras.ops.shape(ids)[1])
        x = self.tok(ids) + self.pos(positions)[None]
        causal = self.config.causal
        attention_mask = None
        if not causal:
            x = self.ln_emb(x)
            if mask is not None:
                attention_mask = keras.ops.cast(mask, "bool")[:, None, :]
        for mha, ln1, up, down, ln2 in self.blocks:
            if causal:
                y = ln1(x)
                x = x + mha(y, y, use_causal_mask=True)
                x = x + down(up(ln2(x)))
            else:
                x = ln1(x + mha(x, x, attention_mask=attention_mask))
                x = ln2(x + down(up(x)))
        return self.ln_emb(x) if causal else x

    def next_token_logits(self, ids: tf.Tensor) -> tf.Tensor:
        """Logits [B, vocab] of the last position, tied to the token embedding."""
        hidden = self(ids)
        return keras.ops.matmul(hidden[:, -1], keras.ops.transpose(self.tok.embeddings))
