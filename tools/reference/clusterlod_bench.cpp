// Times meshoptimizer's cluster-LOD builder (demo/clusterlod.h, the reference issue 15's build-time
// target is set against) on an OBJ file, so that `tools/bench_preprocess.py --reference` can run
// it beside our builder on the same machine in the same minutes. Built by build.sh against a
// meshoptimizer checkout of your own (none is vendored here).
//
//     clusterlod_bench mesh.obj [runs]
//
// The OBJ is read once (positions only; `f` lines fan-triangulated; a/b/c forms and negative
// indices), then clodBuild runs `runs` times (default 5) with clodDefaultConfig(128), no
// attributes, no locks, one thread; only clodBuild is timed. Prints one JSON line: each run's
// seconds, their median and least, and the hierarchy's shape (clusters, level-0 clusters,
// levels, triangles in the last level) to compare with the published figures.

#include "meshoptimizer.h"

#define CLUSTERLOD_IMPLEMENTATION
#include "clusterlod.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static bool readObj(const char* path, std::vector<float>& positions, std::vector<unsigned int>& indices)
{
	FILE* f = fopen(path, "rb");
	if (!f)
		return false;
	std::string text;
	char buf[1 << 16];
	for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;)
		text.append(buf, n);
	fclose(f);

	std::vector<unsigned int> face;
	for (const char* p = text.c_str(); *p;)
	{
		while (*p == ' ' || *p == '\t')
			p++;
		if (p[0] == 'v' && (p[1] == ' ' || p[1] == '\t'))
		{
			p += 2;
			for (int k = 0; k < 3; ++k)
			{
				char* end = nullptr;
				positions.push_back(strtof(p, &end));
				if (end == p)
					return false;
				p = end;
			}
		}
		else if (p[0] == 'f' && (p[1] == ' ' || p[1] == '\t'))
		{
			p += 2;
			face.clear();
			long count = long(positions.size() / 3);
			for (;;)
			{
				while (*p == ' ' || *p == '\t')
					p++;
				if (!*p || *p == '\n' || *p == '\r' || *p == '#')
					break;
				char* end = nullptr;
				long i = strtol(p, &end, 10);
				if (end == p)
					return false;
				p = end;
				while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
					p++; // the /vt/vn part
				long v = i < 0 ? count + i : i - 1;
				if (v < 0 || v >= count)
					return false;
				face.push_back(unsigned(v));
			}
			for (size_t k = 1; k + 1 < face.size(); ++k)
			{
				indices.push_back(face[0]);
				indices.push_back(face[k]);
				indices.push_back(face[k + 1]);
			}
		}
		while (*p && *p != '\n')
			p++;
		if (*p)
			p++;
	}
	return !indices.empty();
}

struct Shape
{
	size_t clusters = 0, level0 = 0;
	std::vector<size_t> depth_triangles;
};

static int onGroup(void* context, clodGroup group, const clodCluster* clusters, size_t count)
{
	Shape& s = *static_cast<Shape*>(context);
	if (group.depth >= int(s.depth_triangles.size()))
		s.depth_triangles.resize(group.depth + 1);
	for (size_t i = 0; i < count; ++i)
	{
		s.level0 += clusters[i].refined == -1;
		s.depth_triangles[group.depth] += clusters[i].index_count / 3;
	}
	s.clusters += count;
	return 0;
}

int main(int argc, char** argv)
{
	if (argc < 2)
	{
		fprintf(stderr, "usage: %s mesh.obj [runs]\n", argv[0]);
		return 2;
	}
	int runs = argc > 2 ? std::max(1, atoi(argv[2])) : 5;
	std::vector<float> positions;
	std::vector<unsigned int> indices;
	if (!readObj(argv[1], positions, indices))
	{
		fprintf(stderr, "%s: cannot read it as an OBJ of triangles\n", argv[1]);
		return 2;
	}

	clodMesh mesh = {};
	mesh.indices = indices.data();
	mesh.index_count = indices.size();
	mesh.vertex_count = positions.size() / 3;
	mesh.vertex_positions = positions.data();
	mesh.vertex_positions_stride = 3 * sizeof(float);
	clodConfig config = clodDefaultConfig(128);

	std::vector<double> seconds;
	Shape shape;
	for (int r = 0; r < runs; ++r)
	{
		shape = Shape();
		auto t0 = std::chrono::steady_clock::now();
		clodBuild(config, mesh, &shape, onGroup);
		seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
	}
	std::vector<double> sorted = seconds;
	std::sort(sorted.begin(), sorted.end());
	size_t h = sorted.size() / 2;
	double median = sorted.size() % 2 ? sorted[h] : 0.5 * (sorted[h - 1] + sorted[h]);

	printf("{\"version\": %d, \"triangles\": %zu, \"runs\": [", MESHOPTIMIZER_VERSION, indices.size() / 3);
	for (size_t i = 0; i < seconds.size(); ++i)
		printf("%s%.5f", i ? ", " : "", seconds[i]);
	printf("], \"median\": %.5f, \"min\": %.5f, \"clusters\": %zu, \"level0\": %zu, \"levels\": %zu, "
	       "\"last_level_triangles\": %zu}\n",
	    median, sorted[0], shape.clusters, shape.level0, shape.depth_triangles.size(),
	    shape.depth_triangles.empty() ? size_t(0) : shape.depth_triangles.back());
	return 0;
}
