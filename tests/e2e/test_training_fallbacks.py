"""A Keras training step (Embedding -> mean -> Dense -> Dense, Adam) runs its
gradient ops inside DiscLaunch: BiasAddGrad, the sparse softmax loss and the
UnsortedSegmentSum Adam uses to sum the embedding's sparse gradient; three
steps give stock TF's losses and weights, with no fallback."""
import keras
import numpy as np
import tensorflow as tf

from graph_inspection import total


def _model_and_step(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.layers.Embedding(50, 8), keras.layers.GlobalAveragePooling1D(),
                              keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])
    model.build((None, None))
    opt = keras.optimizers.Adam(0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return model, step


def test_embedding_adam_step_matches_tf(disc):
    rng = np.random.default_rng(0)
    batches = [(tf.constant(rng.integers(0, 50, (b, s)), tf.int32),
                tf.constant(rng.integers(0, 3, b), tf.int32)) for b, s in [(4, 7), (2, 3), (5, 9)]]
    disc.disable()
    ref_model, ref_step = _model_and_step(1)
    want = [float(ref_step(x, y)) for x, y in batches]
    disc.enable(min_cluster_size=2)
    model, step = _model_and_step(1)
    ex = disc.explain(step, *batches[0])
    assert not {"UnsortedSegmentSum", "BiasAddGrad", "SparseSoftmaxCrossEntropyWithLogits"} & \
        {n["op"] for n in ex.not_clustered}, ex
    got = [float(step(x, y)) for x, y in batches]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(model.trainable_variables, ref_model.trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)
    st = disc.stats()
    assert total(st, "fallbacks") == 0 and total(st, "runs") > 0, st
