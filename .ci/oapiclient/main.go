// Command oapiclient drives a petstore through a client that oapi-codegen
// generated from GET /v1/openapi-3.0.json (see docs/api.md, "Other
// operations"): it lists, creates, gets, and meets 400, 401, 404 and 409,
// each answer decoded into the generated types. .ci/oapi-client.sh builds it
// in a throwaway module beside the generated package "client".
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"example.com/oapiclient/client"
)

func main() {
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "oapiclient:", err)
		os.Exit(1)
	}
	fmt.Println("oapiclient: list, create, get, 400, 401, 404, 409 all as documented")
}

func run(server, key string) error {
	ctx := context.Background()
	bearer := client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+key)
		return nil
	})
	c, err := client.NewClientWithResponses(server, bearer)
	if err != nil {
		return err
	}
	desc := "Loyal companions"
	created, err := c.CreateCategoryWithResponse(ctx, nil, client.NewCategory{Name: "dog", Description: &desc})
	if err != nil || created.JSON201 == nil || created.JSON201.Name != "dog" {
		return fmt.Errorf("create: %v, %s", err, body(created))
	}
	id := created.JSON201.Id
	list, err := c.ListCategoriesWithResponse(ctx, nil)
	if err != nil || list.JSON200 == nil || len(*list.JSON200) != 1 || (*list.JSON200)[0].Id != id {
		return fmt.Errorf("list: %v, %s", err, body(list))
	}
	got, err := c.GetCategoryWithResponse(ctx, id, nil)
	if err != nil || got.JSON200 == nil || got.JSON200.Description == nil || *got.JSON200.Description != desc {
		return fmt.Errorf("get: %v, %s", err, body(got))
	}
	blank, err := c.CreateCategoryWithResponse(ctx, nil, client.NewCategory{Name: "  "})
	if err != nil || blank.JSON400 == nil || blank.JSON400.Status != 400 {
		return fmt.Errorf("create with a blank name: %v, %s", err, body(blank))
	}
	again, err := c.CreateCategoryWithResponse(ctx, nil, client.NewCategory{Name: "DOG"})
	if err != nil || again.JSON409 == nil || again.JSON409.Code != "conflict" {
		return fmt.Errorf("create a taken name: %v, %s", err, body(again))
	}
	missing, err := c.GetCategoryWithResponse(ctx, id+1000, nil)
	if err != nil || missing.JSON404 == nil || missing.JSON404.Code != "not_found" {
		return fmt.Errorf("get a missing id: %v, %s", err, body(missing))
	}
	keyless, err := client.NewClientWithResponses(server)
	if err != nil {
		return err
	}
	denied, err := keyless.ListCategoriesWithResponse(ctx, nil)
	if err != nil || denied.JSON401 == nil || denied.JSON401.Code != "unauthorized" {
		return fmt.Errorf("list without a key: %v, %s", err, body(denied))
	}
	return nil
}

// body quotes an answer for a failure message.
func body(r interface{ StatusCode() int }) string {
	if r == nil {
		return "no answer"
	}
	return fmt.Sprintf("status %d", r.StatusCode())
}
