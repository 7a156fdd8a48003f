"""Loop programs shared by the compiler-level and end-to-end tests."""
import tensorflow as tf


def loss_and_grad(x, w, n):
    """A tanh recurrence h <- tanh(h w + x) run n times, and d(sum h^2)/dw:
    while_v2 adds a backward loop that pops the values and the broadcast
    shapes the forward loop pushed."""
    with tf.GradientTape() as tape:
        tape.watch(w)
        _, h = tf.while_loop(lambda i, h: i < n,
                             lambda i, h: (i + 1, tf.tanh(tf.matmul(h, w) + x)), [0, x])
        loss = tf.reduce_sum(h * h)
    return loss, tape.gradient(loss, w)
