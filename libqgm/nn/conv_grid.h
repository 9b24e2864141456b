/* conv_grid.h - the convolutions of stride 1 or 2 that read a sample's
 * input planes in place (conv_grid.c); conv.c's paths where they fit. Not
 * installed.
 *
 * A sample's planes are its zero-bordered input maps; for stride 2, those
 * split into their phases. On a grid of pw columns per output row (pw the
 * planes' width: pw - ow more than the output has), row (c, ky, kx) of
 * the sample's column matrix is then one contiguous run of the planes, so
 * the products read or add their rows in place instead of through a
 * column matrix copied out pixel by pixel. Stride 2 takes these paths for
 * kernels of 2 x 2 or more. Each function returns 0, having done nothing,
 * where cv does not fit it. */
#ifndef QGM_CONV_GRID_H
#define QGM_CONV_GRID_H

#include <stddef.h>

#include "nn/layers.h"

/* The floats of one sample's planes and the slack the products read past
 * them (the `planes` scratch below). */
size_t qgm__grid_planes_floats(const qgm__conv_t *cv);

/* out (CNHW) = conv(in), no bias. col holds QGM__CONV_COL_FLOATS floats,
 * pack QGM__GEMM_PACK_FLOATS. Stride 1 only, where the grid adds at most
 * a quarter more products than the output has pixels. */
int qgm__grid_forward(const qgm__conv_t *cv, const float *w, qgm__maps_t in,
                      size_t n, float *out, float *col, float *pack);

/* dw = the weight gradient from dout (CNHW); grid holds
 * QGM__CONV_COL_FLOATS floats, planes qgm__grid_planes_floats(cv). Where
 * a sample's grid is long (256 columns or more). */
int qgm__grid_weight_grad(const qgm__conv_t *cv, qgm__maps_t in, size_t n,
                          const float *dout, float *dw, float *grid,
                          float *planes);

/* dx (CNHW) = the input gradient from dout; col, planes and pack as
 * above. */
int qgm__grid_input_grad(const qgm__conv_t *cv, const float *w, size_t n,
                         const float *dout, float *dx, float *col,
                         float *planes, float *pack);

#endif /* QGM_CONV_GRID_H */
